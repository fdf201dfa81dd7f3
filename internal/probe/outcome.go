package probe

import (
	"context"
	"errors"
	"net"
	"os"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
)

// readCap is what a tcp, udp or read attempt takes in.
const readCap = 4096

// socketError is a refusal to create the socket itself, before anything
// was addressed anywhere.
type socketError struct{ err error }

func (e *socketError) Error() string { return e.err.Error() }
func (e *socketError) Unwrap() error { return e.err }

// socketRefused says whether err is the kernel refusing to create a
// socket (EPERM or EACCES from socket(2) itself, as net reports it).
func socketRefused(err error) bool {
	var se *os.SyscallError
	return errors.As(err, &se) && se.Syscall == "socket" &&
		(errors.Is(se.Err, syscall.EPERM) || errors.Is(se.Err, syscall.EACCES))
}

// classify maps an attempt's error to an outcome. Order matters: a wrapped
// timeout can also carry an errno, and the errno is the more precise fact.
func classify(err error) string {
	var pe *partialError
	switch {
	case err == nil:
		return wire.OutcomeCompleted
	case errors.As(err, &pe):
		return wire.OutcomePartial
	case errors.Is(err, errNoProxy):
		return wire.OutcomeNoProxy
	case errors.As(err, new(*socketError)):
		// The sandbox's kernel would not give the socket at all (a ping
		// socket outside ping_group_range, a raw one without CAP_NET_RAW):
		// refused locally, nothing could leave, as with no route.
		return wire.OutcomeUnreachable
	case socketRefused(err):
		// The same for any socket a seccomp filter will not create (Codex's
		// sandbox with the network off: socket(AF_INET) is EPERM): the
		// attempt never had a way out, unlike an EPERM on connect or send,
		// which is a firewall's verdict on a packet.
		return wire.OutcomeUnreachable
	case errors.As(err, new(errProxyRefused)):
		return wire.OutcomeDenied
	case errors.Is(err, syscall.ECONNREFUSED),
		// The other end (a proxy that refused a request before reading
		// all of it) closed or reset the connection under the attempt:
		// something answered, and it said no.
		errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return wire.OutcomeRefused
	case errors.Is(err, syscall.ENETUNREACH), errors.Is(err, syscall.EHOSTUNREACH),
		errors.Is(err, syscall.ENETDOWN), errors.Is(err, syscall.EHOSTDOWN),
		// The kernel had no address of that family to send from (IPv6
		// disabled in the sandbox): it decided, so the attempt was made.
		errors.Is(err, syscall.EADDRNOTAVAIL), errors.Is(err, syscall.EAFNOSUPPORT):
		return wire.OutcomeUnreachable
	case errors.Is(err, syscall.EPERM), errors.Is(err, syscall.EACCES):
		return wire.OutcomeDenied
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded),
		errors.Is(err, syscall.ETIMEDOUT):
		return wire.OutcomeTimeout
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return wire.OutcomeTimeout
	}
	// The resolver inside net reports the socket error only as text.
	var de *net.DNSError
	if errors.As(err, &de) {
		switch msg := de.Err; {
		case strings.Contains(msg, "socket: operation not permitted"), strings.Contains(msg, "socket: permission denied"):
			return wire.OutcomeUnreachable
		case strings.Contains(msg, "operation not permitted"), strings.Contains(msg, "permission denied"):
			return wire.OutcomeDenied
		case strings.Contains(msg, "connection refused"):
			return wire.OutcomeRefused
		case strings.Contains(msg, "network is unreachable"), strings.Contains(msg, "no route to host"):
			return wire.OutcomeUnreachable
		}
	}
	return wire.OutcomeError
}

// clip returns at most n bytes of s as valid UTF-8: a rune cut at the end is
// dropped and each invalid byte becomes '.', so JSON encoding never grows the
// field past what Decode accepts.
func clip(s string, n int) string {
	out := make([]byte, 0, min(len(s), n))
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			if len(out)+1 > n {
				break
			}
			out = append(out, '.')
			i++
			continue
		}
		if len(out)+size > n {
			break
		}
		out = append(out, s[i:i+size]...)
		i += size
	}
	return string(out)
}

// finish stamps the outcome, error and duration on a report. The duration
// is measured on the monotonic clock from began: a step of the wall clock
// during the attempt once made it negative, and the harness dropped the
// report as out of range.
func finish(rep wire.Report, err error, began time.Time) wire.Report {
	rep.Outcome = classify(err)
	if err != nil {
		rep.Error = clip(err.Error(), wire.MaxErrorLen)
	}
	rep.Excerpt = clip(rep.Excerpt, wire.ExcerptCap(rep.Kind))
	rep.DurationMS = float64(time.Since(began).Microseconds()) / 1000
	return rep
}
