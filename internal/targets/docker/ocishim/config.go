package ocishim

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
)

// EditConfig applies a session entry to the OCI config at path: the
// "network" entry of linux.namespaces gets the session's netns (added when
// Docker's host mode left it out), and with Userns a "user" namespace with
// uid and gid mappings is added (what the daemon's --userns-remap puts in
// the spec). Every other field is kept as is.
func EditConfig(path string, e Entry) error {
	if e.Netns == "" && !e.Userns {
		return nil
	}
	if e.Netns != "" {
		if _, err := os.Stat(e.Netns); err != nil {
			return fmt.Errorf("session netns: %w", err)
		}
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
	if e.Netns != "" {
		nss = setNamespace(nss, "network", e.Netns)
	}
	if e.Userns {
		nss = setNamespace(nss, "user", "")
		m := []any{map[string]any{"containerID": 0, "hostID": UsernsHostID, "size": UsernsSize}}
		linux["uidMappings"], linux["gidMappings"] = m, m
		// Docker's default "0 2147483647" names gids the namespace does not
		// map; a daemon with --userns-remap leaves it out too.
		if sc, ok := linux["sysctl"].(map[string]any); ok {
			delete(sc, "net.ipv4.ping_group_range")
		}
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

// setNamespace sets (or adds) the namespace of kind typ; path "" means a
// new one.
func setNamespace(nss []any, typ, path string) []any {
	for _, n := range nss {
		if m, ok := n.(map[string]any); ok && m["type"] == typ {
			if path != "" {
				m["path"] = path
			} else {
				delete(m, "path")
			}
			return nss
		}
	}
	n := map[string]any{"type": typ}
	if path != "" {
		n["path"] = path
	}
	return append(nss, n)
}
