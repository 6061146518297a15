// How the database names this machine's CPU and libraries (the key's device and libs fields).
#pragma once

#include <string>

namespace infera::tune {

// "cpu: <model name> [<oneDNN ISA>]". The thread count is not part of the key on purpose: a
// model then computes the same bits at every --threads (the choice timed first stays), which
// the concurrency tests and users comparing runs rely on.
std::string cpu_device_name();
std::string cpu_libs();  // "oneDNN 2.7.3"

}  // namespace infera::tune
