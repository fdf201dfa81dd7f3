// Package supervisor is the small init that makes a session one sandbox
// instance: the target starts the sandbox once with the supervisor as its
// command, and every Exec of the session becomes a child of it, so all of a
// session's commands share the sandbox's namespaces, /tmp and processes, as
// the commands of a real agent platform do.
//
// The supervisor inherits a listening unix socket (SOCK_SEQPACKET) from the
// harness as a file descriptor. The socket's path lives in the host's file
// system only, so nothing inside the sandbox can reach it by name, and the
// descriptor is close-on-exec, so no command inherits it. Each request is one
// packet: JSON, plus the command's stdin, stdout and stderr as descriptors
// (SCM_RIGHTS), so output is never relayed through the supervisor and stays
// exactly what the command wrote.
//
// Serve runs inside the sandbox (cmd/gatehouse-probe's "init" mode); Client
// runs on the host (the bwrap target).
package supervisor
