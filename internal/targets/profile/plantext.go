package profile

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/gatehouse-dev/gatehouse/targets"
)

// WriteText prints the plan for people: one section per line heading,
// every control with where it lives and whether the guest can reach it.
func (pl Plan) WriteText(w io.Writer) error {
	b := &strings.Builder{}
	line := func(head, format string, a ...any) {
		fmt.Fprintf(b, "  %-11s "+format+"\n", append([]any{head}, a...)...)
	}
	more := func(format string, a ...any) { fmt.Fprintf(b, "  %-11s "+format+"\n", append([]any{""}, a...)...) }

	fmt.Fprintf(b, "plan for profile %s (%s)\n", pl.Profile, pl.File)
	line("policy", "%s", pl.PolicyDigest)
	resolver := pl.Resolver
	if resolver == "" {
		resolver = "the lab's"
	}
	line("target", "%s (%s), network %s, resolver %s", pl.Target, pl.Runtime, pl.Network, resolver)
	if e := pl.Egress; e != nil {
		checked := "not checked on this machine"
		if e.Checked {
			checked = "accepted by nft -c"
		}
		applies := "applies"
		if !e.Applies {
			applies = "DOES NOT APPLY"
		}
		line("egress", "%s %s, tables %s; %s", e.File, e.Digest, strings.Join(e.Tables, ", "), checked)
		more("%s: %s", applies, e.Why)
	} else {
		line("egress", "no ruleset")
	}
	for i, p := range pl.Paths {
		head := ""
		if i == 0 {
			head = "paths"
		}
		line(head, "%-13s uid %d, gid %d, capabilities %s", p.Path, p.UID, p.GID, p.Capabilities)
		more("%-13s on the host: %s", "", p.HostUser.Text)
	}
	if len(pl.Binds) == 0 {
		line("mounts", "none of the profile's own")
	}
	for i, m := range pl.Binds {
		head := ""
		if i == 0 {
			head = "mounts"
		}
		line(head, "%s", bindText(m))
	}
	keys := make([]string, 0, len(pl.Env))
	for k := range pl.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for i, k := range keys {
		head := ""
		if i == 0 {
			head = "env"
		}
		line(head, "%s=%s", k, pl.Env[k])
	}
	for i, r := range pl.References {
		head := ""
		if i == 0 {
			head = "references"
		}
		line(head, "{{%s}}: %s", r.Ref, r.Doc)
	}
	line("gates", "%s", strings.Join(pl.Gates, ", "))
	more("each on the %s and %s paths: %d scenarios", targets.PathNormal, targets.PathBreach, 2*len(pl.Gates))
	stop := fmt.Sprintf("limit %s, scope %s", pl.Stop.Limit, pl.Stop.Scope)
	if len(pl.Stop.Command) > 0 {
		stop += ", stop_command " + strings.Join(pl.Stop.Command, " ")
	}
	line("stop", "%s", stop)
	line("secret process", "%s", pl.SecretProcess)
	b.WriteString("  controls (where each lives; reach: outside or inside the guest's reach, per path)\n")
	for _, c := range pl.Controls {
		fmt.Fprintf(b, "    %-40s %s\n", c.Name, reachText(c.Reach))
		fmt.Fprintf(b, "      where: %s\n", c.Where)
		if c.Why != "" {
			fmt.Fprintf(b, "      why:   %s\n", c.Why)
		}
	}
	if len(pl.Warnings) == 0 {
		b.WriteString("  warnings    none\n")
	} else {
		b.WriteString("  warnings (the gates must still prove these from inside)\n")
		for _, wn := range pl.Warnings {
			fmt.Fprintf(b, "    WARNING %s\n", wn)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func bindText(m Bind) string {
	var flags []string
	if m.ReadOnly {
		flags = append(flags, "read-only")
	} else if m.Type != "tmpfs" {
		flags = append(flags, "read-write")
	}
	if m.Devices {
		flags = append(flags, "devices")
	}
	if m.Optional {
		flags = append(flags, "if present")
	}
	src := m.Source
	if src == "" {
		src = "(" + m.Type + ")"
	} else if m.Type != "bind" {
		src = m.Type + " " + src
	}
	return fmt.Sprintf("%s -> %s (%s) [%s]", src, m.Target, strings.Join(flags, ", "), m.Field)
}

func reachText(r map[string]string) string {
	if len(r) == 0 {
		return "n/a"
	}
	var parts []string
	for _, path := range bothPaths {
		v := r[string(path)]
		if v == ReachInside {
			v = "INSIDE"
		}
		parts = append(parts, string(path)+": "+v)
	}
	return strings.Join(parts, ", ")
}
