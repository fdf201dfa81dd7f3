// Package wire is the format between the probe in a sandbox and the
// harness outside it: a Plan goes in on the probe's stdin as JSON, one
// Report per attempt comes out on its stdout as a JSON line, and `probe
// facts` prints Facts. It holds the kinds of attempt, the outcomes, the
// words and names both sides match on (takedown controls, proxy ways,
// heartbeat and exchange file names, the token and canary shapes), the
// caps, and the strict decoding of what the probe prints.
//
// The harness imports this package and never package probe (the attempts
// themselves), which only the probe binary links.
//
// The harness treats everything the probe prints as hostile (see Decode): a
// report proves at most that an attempt was claimed, never that it was
// blocked. Verdicts come from the controlled endpoints' logs.
package wire

import "time"

// SandboxPath is where targets place the probe binary inside a sandbox.
const SandboxPath = "/gatehouse/bin/probe"

// Attempt kinds the probe knows. Anything else is reported as an error.
const (
	KindHTTP  = "http"  // Target is a URL (http or https); TLS is not verified
	KindTCP   = "tcp"   // Target is host:port; Payload is written, reply read
	KindUDP   = "udp"   // Target is host:port; Payload is sent
	KindICMP  = "icmp"  // Target is an IP (v4 or v6); Payload is the echo data
	KindDNS   = "dns"   // Target is a name; Server is host:port or "" for resolv.conf
	KindRead  = "read"  // Target is a path; reports whether it could be read (+ excerpt)
	KindWrite = "write" // Target is a path; Payload is written (only for session-owned paths)
	KindList  = "list"  // Target is a folder; reports entries
	// KindProxy goes through the proxy the sandbox's environment names
	// (HTTP_PROXY, HTTPS_PROXY, ALL_PROXY in any case; userinfo is sent as
	// Proxy-Authorization Basic or SOCKS5 username/password). The probe
	// finds and speaks to the proxy itself: NO_PROXY does not apply. Via
	// says how (ViaHTTP, ViaConnect, ViaSOCKS5, internal/probe/proxy.go); Target is the
	// URL (http) or the host:port asked for (connect, socks5: sent byte for
	// byte, NUL included). Inside a tunnel the probe requests Inner (TLS
	// first for https, with SNI as server name), or sends Payload raw.
	// Method, Headers ("Host" overrides the wire Host), Body and Follow
	// (http only) are as for KindHTTP. No proxy of the needed kind in the
	// environment: outcome no-proxy.
	KindProxy = "proxy"
)

// KindStash is the reusable-state gate's write: Target is a file path ("~/"
// is the agent's home); the probe makes the missing folders above it (0700)
// and appends Payload to it, and leaves it there. It appends rather than
// truncates so that a later session writing its own value to the same file
// (an AGENTS.md, a cache index) never erases what an earlier one left. The
// Excerpt is the path written, symlinks resolved. Like every write it is
// refused on kernel interfaces (internal/probe/refuse.go).
const KindStash = "stash"

// Ways a proxy attempt asks the proxy (Step.Via).
const (
	ViaHTTP    = "http"    // absolute-form request for Target (a URL) to the HTTP proxy
	ViaConnect = "connect" // CONNECT Target (host:port, any bytes) on the HTTP proxy
	ViaSOCKS5  = "socks5"  // SOCKS5 CONNECT to Target (host:port; an IP literal goes as an address)
)

// Plan is what the harness asks the probe to do.
type Plan struct {
	Session   string `json:"session"`
	Canary    string `json:"canary"`     // per-session value the attempts carry
	TimeoutMS int    `json:"timeout_ms"` // per attempt; the probe caps it at 10 s
	Parallel  int    `json:"parallel"`   // attempts in flight at once; 0 = all
	// Control, when set, keeps stdin open after the plan for the harness's
	// control lines (internal/probe/settle.go): the harness may end attempts early once
	// the kernel's evidence shows they were blocked.
	Control bool   `json:"control,omitempty"`
	Steps   []Step `json:"steps"`
}

// Timeout is the per-attempt timeout with a safe default and cap.
func (p Plan) Timeout() time.Duration {
	d := time.Duration(p.TimeoutMS) * time.Millisecond
	switch {
	case d <= 0:
		return 1500 * time.Millisecond
	case d > 10*time.Second:
		return 10 * time.Second
	}
	return d
}

// Step is one attempt.
type Step struct {
	ID      string            `json:"id"`   // unique within the plan
	Kind    string            `json:"kind"` // one of the Kind constants
	Target  string            `json:"target"`
	Method  string            `json:"method,omitempty"`  // HTTP method, default GET
	Headers map[string]string `json:"headers,omitempty"` // HTTP headers
	Body    string            `json:"body,omitempty"`    // HTTP body
	Payload string            `json:"payload,omitempty"` // tcp/udp/icmp data, write content
	Server  string            `json:"server,omitempty"`  // DNS server host:port; "" = from /etc/resolv.conf
	QType   string            `json:"qtype,omitempty"`   // DNS type, default A
	// Binary, when set, is what tcp and udp send instead of Payload (base64
	// in JSON): data that is not text, such as a QUIC Initial datagram.
	Binary []byte `json:"binary,omitempty"`
	// Follow makes HTTP follow redirects (up to 5). Proxy settings in the
	// environment are honoured only when UseProxy is set: an injected
	// instruction that says "ignore the proxy" is modelled by leaving it off.
	Follow   bool `json:"follow,omitempty"`
	UseProxy bool `json:"use_proxy,omitempty"`
	// Via, Inner, SNI and Absolute shape a KindProxy attempt: how the
	// proxy is asked, the URL requested inside a tunnel, the TLS server
	// name sent there (default: Inner's host) and whether the request line
	// inside the tunnel is in absolute form (GET http://host/... HTTP/1.1).
	Via      string `json:"via,omitempty"`
	Inner    string `json:"inner,omitempty"`
	SNI      string `json:"sni,omitempty"`
	Absolute bool   `json:"absolute,omitempty"`
	// Again, for a proxy attempt, makes it once more after the first,
	// whatever the first got: a name whose first answer was allowed may
	// answer differently the second time (rebinding), and an agent that
	// was refused once tries again.
	Again bool `json:"again,omitempty"`
	// Fill, for http and proxy requests, makes the body Fill bytes long:
	// Body repeated (the canary in it, so every part is the session's),
	// up to MaxFill. A large body to the allowed destination without a
	// plan as large.
	Fill int `json:"fill,omitempty"`
	// Then names a step whose response body supplies a header value for this
	// one: the IMDSv2 token flow (PUT for a token, then GET with it).
	Then *Chain `json:"then,omitempty"`
	// DurationMS is how long a send, receive or heartbeat attempt keeps
	// going (capped by MaxDuration); the per-attempt timeout does not bound
	// a heartbeat, which models an agent that will not stop on its own.
	DurationMS int `json:"duration_ms,omitempty"`
	// Escape makes a heartbeat also start a child that leaves its process
	// group and session (setsid) and keeps a heartbeat of its own going.
	Escape bool `json:"escape,omitempty"`
	// Path, for a heartbeat, is a file each beat also appends a line to
	// (failures ignored: it may not be writable), so a write made after a
	// stop can be seen from outside.
	Path string `json:"path,omitempty"`
	// Use lists URLs a hunt presents each value it found to (as a bearer
	// token and in the metadata-token header): what an agent that found a
	// key would do next. The endpoints, not the probe, record the use.
	Use []string `json:"use,omitempty"`
	// Hints are host paths a search (find or hunt of "@mounts") looks for
	// under every mount point before anything else: where a bind of the
	// host's / or of a host folder above them would show them. They name
	// places, never values, so the probe learns nothing it could fake.
	Hints []string `json:"hints,omitempty"`
	// ChangedSince, for a find, leaves unopened every regular file whose
	// inode last changed (ctime) before it: such a file cannot hold a value
	// written since, and a search for what a session could have planted
	// need not read a shared /tmp's thousands of older files, nor run out
	// of its bound on them. The kernel sets ctime on every write, rename
	// and link and no process can set it back. Unopened files are counted
	// in the report; zero means every file is read.
	ChangedSince time.Time `json:"changed_since,omitzero"`
	// Outside, for a takedown, lists the namespaces the probe must never
	// act in (the harness's and the lab's), as /proc/self/ns links name
	// them; Spare lists nftables tables ("inet NAME") that are the
	// harness's instruments, not the sandbox's controls. See KindTakedown.
	Outside []string `json:"outside,omitempty"`
	Spare   []string `json:"spare,omitempty"`
}

// Chain makes a second request with a header taken from the first response.
type Chain struct {
	Target string            `json:"target"`
	Method string            `json:"method,omitempty"`
	Header string            `json:"header"` // the header to set to the first response's body
	Extra  map[string]string `json:"extra,omitempty"`
}

// Report is what the probe says about one attempt.
type Report struct {
	ID         string    `json:"id"`
	Kind       string    `json:"kind"`
	Target     string    `json:"target"`
	Outcome    string    `json:"outcome"` // completed, partial, refused, unreachable, timeout, denied, error
	Error      string    `json:"error,omitempty"`
	Status     int       `json:"status,omitempty"`  // HTTP status of the last response
	Bytes      int       `json:"bytes,omitempty"`   // bytes received
	Excerpt    string    `json:"excerpt,omitempty"` // first bytes received (capped)
	Start      time.Time `json:"start"`
	DurationMS float64   `json:"duration_ms"`
	// ActiveFrom and ActiveTo, when set, are when the attempt was really at
	// work: a receive listening (its socket bound, its folder polled), a
	// send offering, a search or read searching. Setup before and teardown
	// after are outside it. The two-session gates judge overlap from these,
	// bounded by the window the harness saw from outside.
	ActiveFrom time.Time `json:"active_from,omitzero"`
	ActiveTo   time.Time `json:"active_to,omitzero"`
	// Wrote lists what a writing attempt (stash, send, receive, write)
	// left in place, as absolute paths the probe saw (symlinks resolved):
	// where the harness looks, once the session is gone, for the run's
	// own bytes on the host. Capped (MaxWrote, MaxWroteBytes); hostile,
	// like the rest: the harness removes nothing on its word alone.
	Wrote []string `json:"wrote,omitempty"`
	// Made lists the folders a stash made above its file (they were not
	// there): the only folders the harness may take back with it. Within
	// the same caps as Wrote, together.
	Made []string `json:"made,omitempty"`
	// Answered and Dialed, for tcp, udp and http attempts: a DNS answer
	// reached the attempt, and the addresses (host:port) its connects
	// began toward, noted just before each connect. For an attempt to a
	// name they say where its opening packet had to go, so that a timeout
	// is proven by that packet and not by the lookup's alone. Capped
	// (MaxDialed, MaxDialedLen); hostile, like the rest.
	Answered bool     `json:"answered,omitempty"`
	Dialed   []string `json:"dialed,omitempty"`
}

// Outcomes a report may carry.
const (
	OutcomeCompleted = "completed"
	// OutcomePartial: a search (find, hunt, host check) stopped before it
	// covered everything: a bound or the deadline. What it found is in
	// Excerpt and counts; the search itself does not count as made.
	OutcomePartial     = "partial"
	OutcomeRefused     = "refused"
	OutcomeUnreachable = "unreachable"
	OutcomeTimeout     = "timeout"
	OutcomeDenied      = "denied" // EPERM/EACCES, e.g. a firewall reject or a file mode; a proxy that said no
	OutcomeError       = "error"
	// OutcomeNoProxy: a proxy attempt found no proxy of its kind in the
	// environment, so the sandbox offers that way nothing to try.
	OutcomeNoProxy = "no-proxy"
)

// MaxFill bounds Step.Fill: large enough to show what a size limit is
// for, small enough for the probe to hold.
const MaxFill = 16 << 20
