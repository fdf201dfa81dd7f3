package lab

import (
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"
)

// sniffWait bounds how long a new connection may take to send its first
// bytes before it is recorded as "connected, sent nothing": a contact is a
// contact even when nothing follows it.
const sniffWait = time.Second

// tlsRecordMax is a TLS record header plus the largest plaintext record,
// which a ClientHello fits in.
const tlsRecordMax = 5 + 16<<10

// sniff reads what a client sends first, within sniffWait: a whole TLS
// record when the first byte opens a TLS handshake (so the ClientHello can
// be read), else what the first read brings. It leaves no deadline set.
func sniff(c net.Conn) []byte {
	_ = c.SetReadDeadline(time.Now().Add(sniffWait))
	defer c.SetReadDeadline(time.Time{})
	buf := make([]byte, tlsRecordMax)
	n, err := c.Read(buf)
	if n == 0 || buf[0] != 0x16 {
		return buf[:n]
	}
	for err == nil && n < tlsRecordMax && (n < 5 || n < 5+(int(buf[3])<<8|int(buf[4]))) {
		var m int
		m, err = c.Read(buf[n:])
		n += m
	}
	return buf[:n]
}

// firstBytes describes what a connection sent first, for a hit: a summary
// and the data to keep. A TLS ClientHello is described by its server name
// and ALPN (an intercepting proxy that refuses our certificate still sends
// one); anything else by its first bytes.
func firstBytes(b []byte) (summary, data string) {
	if len(b) == 0 {
		return fmt.Sprintf("nothing sent within %s", sniffWait), ""
	}
	if hello, ok := clientHello(b); ok {
		s := fmt.Sprintf("TLS ClientHello sni=%q alpn=%s", hello.ServerName, strings.Join(hello.SupportedProtos, ","))
		return s, s + "\n" + printable(b[:min(len(b), maxData)])
	}
	if b[0] == 0x16 {
		return fmt.Sprintf("TLS handshake record, %d bytes, no complete ClientHello", len(b)), printable(b[:min(len(b), maxData)])
	}
	d := printable(b[:min(len(b), maxData)])
	return fmt.Sprintf("%d bytes: %s", len(b), d), d
}

var errHelloRead = errors.New("client hello read")

// clientHello parses a ClientHello with crypto/tls itself (no parser of our
// own to get wrong): a server handshake over the recorded bytes stops as
// soon as the hello is decoded.
func clientHello(b []byte) (*tls.ClientHelloInfo, bool) {
	var hello *tls.ClientHelloInfo
	conf := &tls.Config{GetConfigForClient: func(h *tls.ClientHelloInfo) (*tls.Config, error) {
		hello = h
		return nil, errHelloRead
	}}
	_ = tls.Server(replayConn{bytes.NewReader(b)}, conf).Handshake()
	return hello, hello != nil
}

// replayConn is a net.Conn that reads recorded bytes and discards writes.
type replayConn struct{ r *bytes.Reader }

func (c replayConn) Read(p []byte) (int, error)     { return c.r.Read(p) }
func (replayConn) Write(p []byte) (int, error)      { return len(p), nil }
func (replayConn) Close() error                     { return nil }
func (replayConn) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (replayConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
func (replayConn) SetDeadline(time.Time) error      { return nil }
func (replayConn) SetReadDeadline(time.Time) error  { return nil }
func (replayConn) SetWriteDeadline(time.Time) error { return nil }

// looksHTTP reports whether b starts like an HTTP/1 request line.
func looksHTTP(b []byte) bool {
	for _, m := range []string{"GET ", "POST ", "PUT ", "HEAD ", "DELETE ", "OPTIONS ", "PATCH ", "CONNECT "} {
		if bytes.HasPrefix(b, []byte(m)) {
			return true
		}
	}
	return false
}
