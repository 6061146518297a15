// How the database names this machine's CPU and libraries (the key's device and libs fields).
#pragma once

#include <string>

namespace infera::tune {

// "cpu: <model name> [<oneDNN ISA>]" (the threads part is added per build: cpu_device_key).
std::string cpu_device_name();
std::string cpu_device_key(int threads);  // cpu_device_name() + " x<threads> threads"
std::string cpu_libs();                   // "oneDNN 2.7.3"

}  // namespace infera::tune
