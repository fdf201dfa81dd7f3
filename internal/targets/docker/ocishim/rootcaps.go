package ocishim

import (
	"encoding/json"
	"fmt"
	"os"
)

// EditRootCaps sets, in the OCI process spec at path, the capabilities of
// a process that runs as uid 0 to exactly caps (bounding, permitted and
// effective; no inheritable or ambient). A process of another uid keeps
// its own. Every other field is kept as is.
func EditRootCaps(path string, caps []string) error {
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
