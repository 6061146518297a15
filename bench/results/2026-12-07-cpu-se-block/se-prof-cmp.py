import csv, subprocess, sys, collections
m, b, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
res = collections.defaultdict(list)
for r in range(rounds):
    for tag, binp in (('old', '/tmp/infera-base-se'), ('new', '/tmp/infera-se-new')):
        load = open('/proc/loadavg').read().split()[0]
        subprocess.run([binp, 'profile', '/tmp/models/%s.onnx' % m, '--batch', b, '--threads', '2', '--runs', '30' if b == '1' else '5', '--csv', '/tmp/se-p.csv'], capture_output=True)
        rows = list(csv.DictReader(open('/tmp/se-p.csv')))
        tot = sum(float(x['mean_ms']) for x in rows)
        names = {x['node']: x for x in rows}
        # SE parts: the gates' GAPs and fc convs (old) or SqueezeExcite (new), and the SE Muls
        se = mul = 0.0
        for x in rows:
            n = x['node']
            if x['op'] == 'com.infera.SqueezeExcite' or ('/block/' in n and (('/avgpool/' in n) or '/fc1/' in n or '/fc2/' in n)):
                se += float(x['mean_ms'])
            if x['op'] == 'Mul' and '/block/' in n:
                mul += float(x['mean_ms'])
        print('%s b%s round %d %s total %.3f gate(GAP+fc1+fc2 | SqueezeExcite) %.3f Mul %.3f load %s' % (m, b, r + 1, tag, tot, se, mul, load), flush=True)
