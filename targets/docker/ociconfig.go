package docker

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
)

// setNetns makes the OCI config at path join the network namespace netns:
// the "network" entry of linux.namespaces gets that path (and is added
// when Docker's host mode left it out). Every other field is kept as is.
// An empty netns leaves the config alone.
func setNetns(path, netns string) error {
	if netns == "" {
		return nil
	}
	if _, err := os.Stat(netns); err != nil {
		return fmt.Errorf("session netns: %w", err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var cfg map[string]any
	if err := json.Unmarshal(b, &cfg); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	linux, ok := cfg["linux"].(map[string]any)
	if !ok {
		return errors.New("config.json has no linux section")
	}
	nss, _ := linux["namespaces"].([]any)
	found := false
	for _, n := range nss {
		m, ok := n.(map[string]any)
		if ok && m["type"] == "network" {
			m["path"] = netns
			found = true
		}
	}
	if !found {
		nss = append(nss, map[string]any{"type": "network", "path": netns})
	}
	linux["namespaces"] = nss
	out, err := json.Marshal(cfg)
	if err != nil {
		return err
	}
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	tmp := path + ".gatehouse"
	if err := os.WriteFile(tmp, out, fi.Mode().Perm()); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
