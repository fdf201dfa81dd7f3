package evidence

// The run folder's layout: each file Gatehouse writes, by its name inside
// the folder (slash-separated, and so its name inside a bundle). Readers
// and writers in every package use these names; docs/evidence.md shows the
// layout. The seal's own files (SHA256SUMS, attestations/) are named in
// package evidence/bundle.
const (
	RunFile      = "run.json"              // the run record (Run)
	ResultsFile  = "results.json"          // one Result per gate, scenario and path
	PlanFile     = "plan.json"             // the plan the probe ran
	ReportFile   = "report.html"           // the report, written from the records
	JUnitFile    = "reports/junit.xml"     // JUnit XML, from the final verdicts
	CucumberFile = "reports/cucumber.json" // cucumber JSON, from the final verdicts
	PolicyDir    = "policy"                // the profile and every file it references

	HitsTrace           = "traces/endpoint-hits.jsonl"    // what reached the lab's endpoints
	AttemptsTrace       = "traces/probe-attempts.jsonl"   // what the probe says it tried
	PlantedTrace        = "traces/planted.jsonl"          // the canaries planted per session
	SessionWindowsTrace = "traces/session-windows.jsonl"  // when each concurrent session ran
	IntakeTrace         = "traces/intake-exchanges.jsonl" // an intake run's exchanges
	AlertsTrace         = "traces/alerts.jsonl"           // detection: scored apart from the verdict
	TranscriptTrace     = "traces/model-transcript.jsonl" // read by the agent runs' verdicts

	// The report-triage rehearsal's own records.
	RehearsalInputsFile      = "rehearsal/inputs.json"
	RehearsalExpectedFile    = "rehearsal/expected.json"
	RehearsalPlantedFile     = "rehearsal/planted-report.md"
	RehearsalOutcomeFile     = "rehearsal/outcome.json"
	RehearsalCopyChangesFile = "rehearsal/copy-changes.json"
	RehearsalStoredFile      = "rehearsal/result-stored.json"

	// MergeFile is a merge folder's description (bundle.Merge); the merge
	// folder also has a ResultsFile and a ReportFile.
	MergeFile = "merge.json"
)
