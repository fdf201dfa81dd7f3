// Package lab runs Gatehouse's controlled endpoints inside a network
// namespace of their own that has no route out, and joins per-session
// network namespaces to it with veth pairs.
//
// Everything a sandbox can reach in the lab is ours: a callback server
// (on documentation-range and public-looking addresses, recording every TCP
// and UDP port), an allowed inference endpoint (with a redirector, and the
// scripted model a real agent CLI talks to: internal/lab/model), a DNS
// resolver and a DNS authority for a canary zone, and fake cloud metadata
// services. Each request
// that arrives becomes an evidence.Hit, attributed to a session from its
// source address. Verdicts are made from these hits, never from what the
// probe says about itself.
//
// Endpoints run in the calling process: a listener is created on an OS
// thread that has briefly joined the lab namespace (setns), and a socket
// keeps its namespace afterwards, so the rest of the process stays in the
// host namespace. The lab is fail-closed: Up and Attach refuse to go on
// unless Sealed proves the lab namespace has no route to anything outside.
// See docs/lab.md for addresses and what each endpoint records.
package lab
