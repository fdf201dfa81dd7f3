package profile

import (
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/gatehouse-dev/gatehouse/targets"
)

// Account is what the machine knows of a uid: its passwd entry and the
// processes running as it.
type Account struct {
	Name, Home, Shell string
	HomeExists        bool
	Processes         int
}

// LookupAccount reads the host's account of uid (false: no passwd entry).
// A variable so that plan tests need not depend on the machine's accounts.
var LookupAccount = func(uid int) (Account, bool) {
	u, err := user.LookupId(strconv.Itoa(uid))
	if err != nil {
		return Account{}, false
	}
	a := Account{Name: u.Username, Home: u.HomeDir, Shell: shellOf(u.Username)}
	if fi, err := os.Stat(u.HomeDir); err == nil && fi.IsDir() && u.HomeDir != "/" {
		a.HomeExists = true
	}
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		if fi, err := os.Stat(p); err == nil {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) == uid {
				a.Processes++
			}
		}
	}
	return a, true
}

// shellOf reads name's login shell from /etc/passwd (os/user does not
// give it).
func shellOf(name string) string {
	b, err := os.ReadFile("/etc/passwd")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Split(line, ":")
		if len(f) == 7 && f[0] == name {
			return f[6]
		}
	}
	return ""
}

// accountWarnings warns, for each path whose sandbox user is the
// profile's uid as is on the host (a wrapper's), when that uid is a real
// account of this machine: a prompt-injected agent then acts as that
// account, with its files wherever the wrapper shows the host and its
// processes to signal. Real deployments give the agent an account of its
// own; a profile should too.
func (p *Profile) accountWarnings() []Warning {
	var out []Warning
	for _, path := range []targets.Path{targets.PathNormal, targets.PathBreach} {
		hu := p.HostUser(path)
		if hu.Kind != HostProfile || hu.UID == nil || *hu.UID == 0 {
			continue
		}
		a, ok := LookupAccount(*hu.UID)
		if !ok {
			continue
		}
		login := a.Shell != "" && !strings.HasSuffix(a.Shell, "/nologin") && !strings.HasSuffix(a.Shell, "/false")
		if !login && !a.HomeExists && a.Processes == 0 {
			continue
		}
		var what []string
		if login {
			what = append(what, "login shell "+a.Shell)
		}
		if a.HomeExists {
			what = append(what, "home "+a.Home)
		}
		if a.Processes > 0 {
			what = append(what, fmt.Sprintf("%d process(es) running", a.Processes))
		}
		out = append(out, Warning{File: p.source, Field: "paths." + string(path) + ".uid",
			Msg: fmt.Sprintf("the %s path's sandbox user is host uid %d, this machine's account %q (%s): a prompt-injected agent acts as that account wherever the wrapper shows the host; give the profile a uid with no login, home or processes of its own",
				path, *hu.UID, a.Name, strings.Join(what, ", "))})
	}
	return out
}
