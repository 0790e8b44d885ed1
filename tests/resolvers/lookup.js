// Node's dns module as a program calls it, for the resolver matrix
// (tests/resolvers.rs). `node lookup.js lookup`: dns.lookup (getaddrinfo
// through libuv, so the libc's search walk); `node lookup.js resolve`:
// dns.resolve4/resolve6/resolveSrv/resolveCname/reverse (Node's bundled
// c-ares, ares_query: no search list). Reads "ID KIND NAME" lines on stdin
// and prints "ID MILLISECONDS ok VALUE..." or "ID MILLISECONDS err CLASS DETAIL".
'use strict';
const dns = require('dns').promises;
const mode = process.argv[2];

function classify(e) {
  const code = (e && e.code) || String(e);
  if (code === 'ENOTFOUND' || code === 'ENODATA') return `err notfound ${code}`;
  // Debian's node links the system c-ares (1.18), which reports SERVFAIL
  // from every server as ECONNREFUSED; newer c-ares says ESERVFAIL.
  if (code === 'ESERVFAIL' || code === 'ECONNREFUSED' || code === 'EAI_AGAIN') return `err temp ${code}`;
  if (code === 'ETIMEOUT') return `err timeout ${code}`;
  return `err error ${code}`;
}

// Both families as one answer: NODATA for one of them is no failure.
async function resolveHost(name) {
  const got = await Promise.allSettled([dns.resolve4(name), dns.resolve6(name)]);
  const ok = got.filter((g) => g.status === 'fulfilled').flatMap((g) => g.value);
  if (ok.length > 0) return ok;
  const errs = got.filter((g) => g.status === 'rejected').map((g) => g.reason);
  // (a reply with only a CNAME resolves to no address and no error)
  throw errs.find((e) => e.code !== 'ENODATA' && e.code !== 'ENOTFOUND') || errs[0] || { code: 'ENODATA' };
}

async function one(kind, name) {
  if (mode === 'lookup') {
    if (kind !== 'host') return null;
    return (await dns.lookup(name, { all: true })).map((a) => a.address);
  }
  switch (kind) {
    case 'host': return resolveHost(name);
    case 'srv': return (await dns.resolveSrv(name)).map((s) => `${s.priority}:${s.weight}:${s.port}:${s.name}`);
    case 'cname': return dns.resolveCname(name);
    case 'ptr': return dns.reverse(name);
    default: return null;
  }
}

async function main() {
  const lines = require('fs').readFileSync(0, 'utf8').split('\n');
  for (const line of lines) {
    const f = line.trim().split(/\s+/);
    if (f.length !== 3) continue;
    const start = Date.now();
    let out;
    try {
      const values = await one(f[1], f[2]);
      if (values === null) continue;
      out = `ok ${values.join(' ')}`;
    } catch (e) {
      out = classify(e);
    }
    process.stdout.write(`${f[0]} ${Date.now() - start} ${out}\n`);
  }
}
main();
