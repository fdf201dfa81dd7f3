package docker

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

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

// editRootCaps sets, in the OCI process spec at path, the capabilities of
// a process that runs as uid 0 to exactly caps (bounding, permitted and
// effective; no inheritable or ambient). A process of another uid keeps
// its own. Every other field is kept as is.
func editRootCaps(path string, caps []string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var proc map[string]any
	if err := json.Unmarshal(b, &proc); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	user, _ := proc["user"].(map[string]any)
	if uid, _ := user["uid"].(float64); user == nil || uid != 0 {
		return nil
	}
	set := append([]string{}, caps...)
	proc["capabilities"] = map[string]any{"bounding": set, "permitted": set, "effective": set}
	out, err := json.Marshal(proc)
	if err != nil {
		return err
	}
	return os.WriteFile(path, out, 0o600)
}
