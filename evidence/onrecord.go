package evidence

// searchKinds are the attempts that search (folders, environments, mount
// tables, sockets) rather than send: find, hunt, and the host checks.
var searchKinds = map[string]bool{"find": true, "hunt": true, "hostcheck": true}

// AttemptOnRecord reports whether a report counts as proof that a planned
// attempt of the secrets, host and storage gates was made. A search
// counts only when it covered everything it was asked to: it completed
// (a place that does not exist is covered), or the kernel refused it
// (denied, refused). A search that timed out, stopped part-way (partial)
// or failed inside the probe (error) proves nothing about what it did not
// reach, so it cannot support a PASS; what it did find still counts as
// proof of a read. Other kinds (read, write, list, http, ...) count with
// any report, as before: their report is the attempt.
func AttemptOnRecord(a Attempt) bool {
	if !searchKinds[a.Kind] {
		return true
	}
	switch a.Outcome {
	case "completed", "denied", "refused":
		return true
	}
	return false
}
