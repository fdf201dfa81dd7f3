package wire

// KindTakedown: root in the guest (assume-breach) tries to turn off one
// control of the sandbox within its reach. Target names the control (one of
// TakedownControls); Outside lists the namespaces ("net:[4026531840]", the
// form /proc/self/ns links take) the probe must never act in: the
// harness's own and the lab's. Spare names nftables tables ("inet NAME")
// that are the harness's instruments, not controls (the lab's packet
// accounting filters nothing), so they survive and still count.
//
// The probe acts only inside its own namespaces, never on the host or the
// lab: each control is tried only when the namespace it lives in is none of
// Outside (ownNamespace), and a namespace it cannot identify is refused.
//
// Excerpt is one line per thing tried, each starting with what happened:
// "changed: " (the kernel allowed a change), "refused: " (the kernel said
// no), "unchanged: " (nothing to do), "skipped: " (the probe's own choice),
// "failed: " (another error). Outcome is completed when something changed
// or nothing needed to, denied when the kernel refused, error otherwise.
const KindTakedown = "takedown"

// Controls a takedown step may name, in the order the harness runs them:
// the remount comes before the sysctl and cgroup writes it may enable.
const (
	TakedownProxy     = "proxy"     // proxy settings, and in-sandbox proxy bridges on loopback
	TakedownNftables  = "nftables"  // every nftables table in the namespace (iptables-nft too)
	TakedownIptables  = "iptables"  // iptables-legacy tables
	TakedownLinks     = "links"     // interfaces that are down
	TakedownRoutes    = "routes"    // a default route where there is none
	TakedownAddresses = "addresses" // an address of the probe's choosing
	TakedownRemount   = "remount"   // read-only mounts, made read-write
	TakedownSysctl    = "sysctl"    // network sysctls of the namespace
	TakedownCgroup    = "cgroup"    // the probe's own cgroup limits
)

// TakedownControls is every control a takedown knows, in run order.
var TakedownControls = []string{
	TakedownProxy, TakedownNftables, TakedownIptables, TakedownLinks, TakedownRoutes,
	TakedownAddresses, TakedownRemount, TakedownSysctl, TakedownCgroup,
}

// Line prefixes of a takedown's Excerpt.
const (
	TakedownChanged   = "changed: "
	TakedownRefused   = "refused: "
	TakedownUnchanged = "unchanged: "
	TakedownSkipped   = "skipped: "
	TakedownFailed    = "failed: "
)
