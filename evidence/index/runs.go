package index

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/gatehouse-dev/gatehouse/evidence"
)

// Run is one recorded bundle.
type Run struct {
	ID             string
	Dir            string
	Started, Ended time.Time
	Target         string
	Profile        string
	PolicyDigest   string
	ImageDigest    string
	Harness        string
	Verdict        string // test-result summary: PASSED, WARNED, FAILED
	Passed         int
	Failed         int
	Other          int // inconclusive or skipped
	VerifiedAt     time.Time
	KeyFingerprint string
	Group          string   // run group ("" for none)
	Shard          string   // "K/N" of a sharded run, "" for a whole one
	Results        []Result // filled by Candidates, not by History
}

// Result is one scenario on one path.
type Result struct {
	Gate     string
	Scenario string
	Path     string
	Verdict  evidence.Verdict
	Control  bool
	// StopLimitMS is the limit a stop-signal result was judged against
	// (its timings' stop_limit_ms); 0 when not recorded.
	StopLimitMS float64
	// Detection is the result's detection score; nil when the run did
	// not measure detection (or predates it).
	Detection *evidence.Detection
}

// FromRun builds the row for a verified bundle: dir is where it lives,
// verdict its test-result summary, key the fingerprint it verified with.
func FromRun(dir string, run evidence.Run, results []evidence.Result, verdict, key string, verifiedAt time.Time) Run {
	r := Run{ID: run.ID, Dir: dir, Started: run.Start, Ended: run.End, Target: run.Target,
		Profile: run.Profile, PolicyDigest: run.PolicyDigest, ImageDigest: run.ImageDigest,
		Harness: run.Harness, Verdict: verdict, VerifiedAt: verifiedAt, KeyFingerprint: key,
		Group: run.Group, Shard: run.Shard}
	for _, x := range results {
		switch x.Verdict {
		case evidence.Pass:
			r.Passed++
		case evidence.Fail:
			r.Failed++
		default:
			r.Other++
		}
		r.Results = append(r.Results, Result{Gate: x.Gate, Scenario: x.Scenario, Path: x.Path,
			Verdict: x.Verdict, Control: x.Control, StopLimitMS: x.Timings["stop_limit_ms"], Detection: x.Detection})
	}
	return r
}

// Record stores a run and its results, replacing an earlier record of the
// same run id, in one transaction.
func (ix *Index) Record(ctx context.Context, r Run) error {
	return ix.RecordAll(ctx, []Run{r})
}

// RecordAll stores many runs in one transaction (re-indexing a folder).
func (ix *Index) RecordAll(ctx context.Context, runs []Run) error {
	tx, err := ix.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("index: record: %w", err)
	}
	defer tx.Rollback()
	for _, r := range runs {
		if err := insert(ctx, tx, r); err != nil {
			return fmt.Errorf("index: record %s: %w", r.ID, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("index: record: %w", err)
	}
	return nil
}

func insert(ctx context.Context, tx *sql.Tx, r Run) error {
	if _, err := tx.ExecContext(ctx, `DELETE FROM runs WHERE id = ?`, r.ID); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO runs (id, dir, started, ended, target, profile,
		policy_digest, image_digest, harness, verdict, passed, failed, other, verified_at, key_fingerprint,
		run_group, shard)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		r.ID, r.Dir, r.Started.UnixNano(), r.Ended.UnixNano(), r.Target, r.Profile,
		r.PolicyDigest, r.ImageDigest, r.Harness, r.Verdict, r.Passed, r.Failed, r.Other,
		r.VerifiedAt.UnixNano(), r.KeyFingerprint, r.Group, r.Shard)
	if err != nil {
		return err
	}
	for _, x := range r.Results {
		det := ""
		if x.Detection != nil {
			b, err := json.Marshal(x.Detection)
			if err != nil {
				return err
			}
			det = string(b)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO results (run_id, gate, scenario, path, verdict, control, stop_limit_ms, detection)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, r.ID, x.Gate, x.Scenario, x.Path, string(x.Verdict), x.Control, x.StopLimitMS, det); err != nil {
			return err
		}
	}
	return nil
}

const runCols = `id, dir, started, ended, target, profile, policy_digest, image_digest, harness,
	verdict, passed, failed, other, verified_at, key_fingerprint, run_group, shard`

// Candidates returns, for one policy digest, every run a gate decision
// needs, with results, newest first: per image digest (including "") the
// newest run, and the newest run that has each (gate, path), so that the
// shards of a run group decide their own gates, whatever the number of
// older runs.
func (ix *Index) Candidates(ctx context.Context, policyDigest string) ([]Run, error) {
	runs, err := ix.query(ctx, `SELECT `+runCols+` FROM runs r WHERE policy_digest = ?
		AND (id = (SELECT id FROM runs WHERE policy_digest = r.policy_digest
			AND image_digest = r.image_digest ORDER BY ended DESC, id DESC LIMIT 1)
		OR id IN (SELECT run_id FROM (SELECT x.run_id, ROW_NUMBER() OVER (
				PARTITION BY y.image_digest, x.gate, x.path ORDER BY y.ended DESC, y.id DESC) AS n
			FROM results x JOIN runs y ON y.id = x.run_id WHERE y.policy_digest = r.policy_digest)
			WHERE n = 1))
		ORDER BY ended DESC, id DESC`, policyDigest)
	if err != nil {
		return nil, fmt.Errorf("index: candidates: %w", err)
	}
	if err := ix.fill(ctx, runs); err != nil {
		return nil, fmt.Errorf("index: candidates: %w", err)
	}
	return runs, nil
}

// Group returns the runs of a run group, with results, oldest first.
func (ix *Index) Group(ctx context.Context, group string) ([]Run, error) {
	runs, err := ix.query(ctx, `SELECT `+runCols+` FROM runs WHERE run_group = ? ORDER BY ended, id`, group)
	if err != nil {
		return nil, fmt.Errorf("index: group: %w", err)
	}
	if err := ix.fill(ctx, runs); err != nil {
		return nil, fmt.Errorf("index: group: %w", err)
	}
	return runs, nil
}

func (ix *Index) fill(ctx context.Context, runs []Run) error {
	for i := range runs {
		var err error
		if runs[i].Results, err = ix.results(ctx, runs[i].ID); err != nil {
			return err
		}
	}
	return nil
}

// History lists recorded runs, newest first; limit <= 0 means all.
func (ix *Index) History(ctx context.Context, limit int) ([]Run, error) {
	if limit <= 0 {
		limit = -1
	}
	runs, err := ix.query(ctx, `SELECT `+runCols+` FROM runs ORDER BY ended DESC, id DESC LIMIT ?`, limit)
	if err != nil {
		return nil, fmt.Errorf("index: history: %w", err)
	}
	return runs, nil
}

func (ix *Index) query(ctx context.Context, q string, args ...any) ([]Run, error) {
	rows, err := ix.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Run
	for rows.Next() {
		var r Run
		var st, en, va int64
		if err := rows.Scan(&r.ID, &r.Dir, &st, &en, &r.Target, &r.Profile, &r.PolicyDigest,
			&r.ImageDigest, &r.Harness, &r.Verdict, &r.Passed, &r.Failed, &r.Other, &va,
			&r.KeyFingerprint, &r.Group, &r.Shard); err != nil {
			return nil, err
		}
		r.Started, r.Ended, r.VerifiedAt = time.Unix(0, st).UTC(), time.Unix(0, en).UTC(), time.Unix(0, va).UTC()
		out = append(out, r)
	}
	return out, rows.Err()
}

func (ix *Index) results(ctx context.Context, runID string) ([]Result, error) {
	rows, err := ix.db.QueryContext(ctx, `SELECT gate, scenario, path, verdict, control, stop_limit_ms, detection
		FROM results WHERE run_id = ? ORDER BY rowid`, runID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Result
	for rows.Next() {
		var x Result
		var v, det string
		if err := rows.Scan(&x.Gate, &x.Scenario, &x.Path, &v, &x.Control, &x.StopLimitMS, &det); err != nil {
			return nil, err
		}
		if det != "" {
			x.Detection = &evidence.Detection{}
			if err := json.Unmarshal([]byte(det), x.Detection); err != nil {
				return nil, fmt.Errorf("result %s/%s detection: %w", x.Gate, x.Path, err)
			}
		}
		x.Verdict = evidence.Verdict(v)
		out = append(out, x)
	}
	return out, rows.Err()
}
