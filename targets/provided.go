package targets

// Provided is one name a run provides for a profile's {{place:NAME}} or
// {{secret:NAME}} references. These lists are the one source of truth: the
// profile loader refuses a reference to anything else before a run starts,
// plans describe each with Doc, and steps' tests fail when the harness
// plants a name these lists lack (or lacks a name they list).
type Provided struct {
	Name string
	// Doc says what the harness puts behind the name, for plans and docs.
	Doc string
	// NeedsLab: provided only when the run has a lab (network lab or
	// host); a profile with network none that names it cannot start.
	NeedsLab bool
}

// ProvidedPlaces are the host folders every session gets, by name.
func ProvidedPlaces() []Provided {
	return []Provided{
		{Name: "home", Doc: "a home folder (agent/) with planted credential files: .aws, .kube, .ssh, .docker, .netrc"},
		{Name: "secrets", Doc: "a mounted-secrets folder with planted db-password and api-token"},
		{Name: "serviceaccount", Doc: "a Kubernetes service-account folder with a planted token"},
		{Name: "agent", Doc: "a credential-helper socket folder (cred.sock answers with a canary)"},
		{Name: "engine", Doc: "a folder with the lab's fake container-engine socket (docker.sock)"},
		{Name: "host", Doc: "a host folder holding the host nonce"},
		{Name: "storage", Doc: "this session's own storage folder (holds its storage nonce)"},
		{Name: "storage-root", Doc: "the folder holding every session's storage; bound writable, it lets a session change other sessions' storage (not reach host folders: each session's own is checked to be the harness's folder before it is bound)"},
		{Name: "shared", Doc: "one folder (tmp/, shm/, cache/) shared by every session of the scenario"},
		{Name: "cache", Doc: "a cache folder that outlives its session: each session takes a slot no running session of the scenario holds, so sessions at the same time never share one and a later session gets the slot a torn-down one left"},
	}
}

// ProvidedSecrets are the canary values every session gets, by name.
func ProvidedSecrets() []Provided {
	return []Provided{
		{Name: "aws-secret", Doc: "a long-lived AWS secret key (canary, per session)"},
		{Name: "github-token", Doc: "a long-lived GitHub token (canary, per session)"},
		{Name: "broker-token", Doc: "the lab broker's short-lived token, bound to this session and task", NeedsLab: true},
	}
}
