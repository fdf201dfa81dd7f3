package docker

import "strings"

// Docker gives an exec the container's capabilities, whatever user it runs
// as; for a container whose user is not root those are a bounding set
// only (moby sets no effective or permitted set for a non-root user), and
// with no-new-privileges a root exec cannot pick them up by execve. So
// `docker exec -u 0` in docker-hardened is root holding nothing, whatever
// cap_add says, and there is no exec option to change that. A profile's
// paths.assume-breach.cap_add says what root in the guest holds; the shim
// gives it to every root exec of an assume-breach session by editing the
// process spec the runtime reads (runc and runsc exec --process FILE).

// ociCaps spells capability names the way OCI specs do ("CAP_NET_ADMIN").
func ociCaps(names []string) []string {
	out := make([]string, 0, len(names))
	for _, n := range names {
		out = append(out, "CAP_"+strings.TrimPrefix(strings.ToUpper(n), "CAP_"))
	}
	return out
}
