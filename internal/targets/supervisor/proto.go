package supervisor

import (
	"encoding/json"
	"errors"
	"fmt"
)

// Operations a request may ask for.
const (
	OpPing   = "ping"   // reply Ready: the supervisor serves
	OpExec   = "exec"   // run Args with Env; three descriptors come along
	OpSignal = "signal" // send Signal to every running command's process group
)

// maxPacket bounds one request or reply: arguments and environment of one
// command, never output (that goes through the descriptors).
const maxPacket = 256 << 10

// Request is one packet from the host.
type Request struct {
	Op     string            `json:"op"`
	Args   []string          `json:"args,omitempty"`
	Env    map[string]string `json:"env,omitempty"`
	Dir    string            `json:"dir,omitempty"`
	Signal int               `json:"signal,omitempty"`
}

// Reply is one packet from the supervisor. An exec gets two: Started (with
// the command's pid as the sandbox sees it), then Exited.
type Reply struct {
	Ready    bool   `json:"ready,omitempty"`
	Started  bool   `json:"started,omitempty"`
	Pid      int    `json:"pid,omitempty"`
	Exited   bool   `json:"exited,omitempty"`
	Code     int    `json:"code"`
	Signal   int    `json:"signal,omitempty"`   // the signal that ended it, 0 if it exited
	Signaled int    `json:"signaled,omitempty"` // OpSignal: process groups signalled
	Error    string `json:"error,omitempty"`
}

func encode(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	if len(b) > maxPacket {
		return nil, fmt.Errorf("supervisor: message of %d bytes is over %d", len(b), maxPacket)
	}
	return b, nil
}

func decodeRequest(b []byte) (Request, error) {
	var r Request
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("bad request: %w", err)
	}
	switch r.Op {
	case OpPing, OpSignal:
	case OpExec:
		if len(r.Args) == 0 || r.Args[0] == "" {
			return r, errors.New("bad request: exec without a command")
		}
	default:
		return r, fmt.Errorf("bad request: unknown op %q", r.Op)
	}
	return r, nil
}
