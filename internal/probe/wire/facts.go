package wire

// Facts is what `probe facts` reads about the sandbox from the inside, for a
// target's Inspect. Each field is read, never guessed: a value that could not
// be read is left empty and named in Errors.
type Facts struct {
	UID        int               `json:"uid"`
	GID        int               `json:"gid"`
	UIDMap     string            `json:"uid_map"`
	GIDMap     string            `json:"gid_map"`
	CapEff     string            `json:"cap_eff"` // hex from /proc/self/status
	CapBnd     string            `json:"cap_bnd"`
	Seccomp    string            `json:"seccomp"` // 0 off, 1 strict, 2 filter
	NoNewPrivs string            `json:"no_new_privs"`
	Namespaces map[string]string `json:"namespaces"` // name -> link target, e.g. "net" -> "net:[4026532]"
	Mounts     []string          `json:"mounts"`     // mount points with fs type and options
	Hostname   string            `json:"hostname"`
	Kernel     string            `json:"kernel"`      // uname release + version as the sandbox sees it
	Addrs      []string          `json:"addrs"`       // interface addresses
	Resolv     string            `json:"resolv_conf"` // /etc/resolv.conf content, capped
	Errors     []string          `json:"errors,omitempty"`
}
