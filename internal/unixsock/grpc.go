package unixsock

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
)

// The gRPC Version calls of containerd and of the Kubernetes CRI (CRI-O,
// containerd's CRI plugin). Both take an empty request and change nothing.
const (
	containerdVersion = "/containerd.services.version.v1.Version/Version"
	criVersion        = "/runtime.v1.RuntimeService/Version"
)

// h2Preface is what an HTTP/2 client sends first (RFC 9113 §3.4).
const h2Preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

// HTTP/2 frame types and flags used here.
const (
	frameData     = 0x0
	frameHeaders  = 0x1
	frameRST      = 0x3
	frameSettings = 0x4
	frameGoAway   = 0x7
	flagEndStream = 0x1
	flagAck       = 0x1
	flagEndHdrs   = 0x4
)

// askGRPC asks p for containerd's, then CRI's, Version. ok is false when
// no HTTP/2 server answered at all.
func askGRPC(ctx context.Context, p string) (EngineAnswer, bool) {
	fields, h2 := grpcCall(ctx, p, containerdVersion)
	if fields[1] != "" {
		return EngineAnswer{Type: EngineContainerd, Detail: detail("version", fields[1], "revision", fields[2])}, true
	}
	if !h2 {
		return EngineAnswer{}, false
	}
	if fields, _ := grpcCall(ctx, p, criVersion); fields[2] != "" {
		return EngineAnswer{Type: EngineCRI, Detail: detail("runtime", fields[2], "version", fields[3], "api", fields[4])}, true
	}
	return EngineAnswer{Type: EngineGRPC, Detail: "-"}, true
}

// grpcCall makes one unary call with an empty request over a fresh
// connection and returns the string fields (by number, 1..4) of the
// answer, and whether an HTTP/2 server spoke at all. Headers are sent as
// HPACK literals, so no HPACK state is needed; the answer's headers are
// not decoded (the DATA carries what we want).
func grpcCall(ctx context.Context, p, method string) (fields [5]string, h2 bool) {
	ctx, cancel := context.WithTimeout(ctx, askTimeoutOf(ctx))
	defer cancel()
	c, err := (&net.Dialer{}).DialContext(ctx, "unix", p)
	if err != nil {
		return fields, false
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	dl, _ := ctx.Deadline()
	_ = c.SetDeadline(dl)

	var req bytes.Buffer
	req.WriteString(h2Preface)
	writeFrame(&req, frameSettings, 0, 0, nil)
	var hb []byte
	for _, kv := range [][2]string{{":method", "POST"}, {":scheme", "http"}, {":path", method},
		{":authority", "localhost"}, {"content-type", "application/grpc"}, {"te", "trailers"}} {
		hb = hpackLiteral(hb, kv[0], kv[1])
	}
	writeFrame(&req, frameHeaders, flagEndHdrs, 1, hb)
	writeFrame(&req, frameData, flagEndStream, 1, []byte{0, 0, 0, 0, 0}) // empty message
	_, _ = c.Write(req.Bytes())                                          // the server may answer anyway

	var data []byte
	for len(data) < readCap {
		typ, flags, stream, payload, err := readFrame(c)
		if err != nil {
			break
		}
		h2 = true
		switch {
		case typ == frameSettings && flags&flagAck == 0:
			var ack bytes.Buffer
			writeFrame(&ack, frameSettings, flagAck, 0, nil)
			_, _ = c.Write(ack.Bytes())
		case typ == frameData && stream == 1:
			data = append(data, payload...)
			if flags&flagEndStream != 0 {
				return grpcFields(data), h2
			}
		case typ == frameHeaders && stream == 1 && flags&flagEndStream != 0,
			typ == frameRST && stream == 1, typ == frameGoAway:
			return grpcFields(data), h2
		}
	}
	return grpcFields(data), h2
}

func writeFrame(w *bytes.Buffer, typ, flags byte, stream uint32, payload []byte) {
	n := len(payload)
	w.Write([]byte{byte(n >> 16), byte(n >> 8), byte(n), typ, flags})
	_ = binary.Write(w, binary.BigEndian, stream&0x7fffffff)
	w.Write(payload)
}

// readFrame reads one frame of at most 16 KiB (the default maximum).
func readFrame(r io.Reader) (typ, flags byte, stream uint32, payload []byte, err error) {
	var h [9]byte
	if _, err = io.ReadFull(r, h[:]); err != nil {
		return
	}
	n := int(h[0])<<16 | int(h[1])<<8 | int(h[2])
	if n > 1<<14 {
		return 0, 0, 0, nil, errors.New("frame too large")
	}
	payload = make([]byte, n)
	_, err = io.ReadFull(r, payload)
	return h[3], h[4], binary.BigEndian.Uint32(h[5:]) & 0x7fffffff, payload, err
}

// hpackLiteral appends a "literal header field without indexing, new
// name" (RFC 7541 §6.2.2) with plain (not Huffman) strings.
func hpackLiteral(b []byte, name, value string) []byte {
	b = append(b, 0x00)
	b = hpackString(b, name)
	return hpackString(b, value)
}

func hpackString(b []byte, s string) []byte {
	n := len(s)
	if n < 127 {
		b = append(b, byte(n))
	} else {
		b = append(b, 127)
		for n -= 127; n >= 128; n >>= 7 {
			b = append(b, byte(n%128+128))
		}
		b = append(b, byte(n))
	}
	return append(b, s...)
}

// grpcFields reads the first gRPC message in data (1-byte flag, 4-byte
// length, protobuf) and returns its string fields 1..4.
func grpcFields(data []byte) (out [5]string) {
	if len(data) < 5 || data[0] != 0 {
		return out
	}
	n := int(binary.BigEndian.Uint32(data[1:5]))
	msg := data[5:]
	if n < len(msg) {
		msg = msg[:n]
	}
	for len(msg) > 0 {
		key, k := binary.Uvarint(msg)
		if k <= 0 {
			return out
		}
		msg = msg[k:]
		field, wire := key>>3, key&7
		switch wire {
		case 0:
			_, k = binary.Uvarint(msg)
			if k <= 0 {
				return out
			}
			msg = msg[k:]
		case 2:
			l, k := binary.Uvarint(msg)
			if k <= 0 || uint64(len(msg)-k) < l {
				return out
			}
			if field >= 1 && field <= 4 {
				out[field] = string(msg[k : k+int(l)])
			}
			msg = msg[k+int(l):]
		default:
			return out // fixed-width fields: not in these messages
		}
	}
	return out
}
