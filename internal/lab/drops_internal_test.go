package lab

import (
	"reflect"
	"testing"
)

func TestParseDropCounters(t *testing.T) {
	snmp := "Ip: Forwarding DefaultTTL\nIp: 1 64\nUdp: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors InCsumErrors IgnoredMulti MemErrors\nUdp: 10 1 3 9 3 0 0 0 0\n"
	got, err := parseSnmp([]byte(snmp))
	if err != nil || got["Udp:RcvbufErrors"] != 3 || got["Udp:MemErrors"] != 0 || got["Ip:Forwarding"] != 1 {
		t.Errorf("parseSnmp = %v, %v", got, err)
	}
	if _, err := parseSnmp([]byte("Udp: A B\nUdp: 1\n")); err == nil {
		t.Error("a short value line parsed")
	}
	if _, err := parseSnmp([]byte("Udp: A\nUdp: x\n")); err == nil {
		t.Error("a bad value parsed")
	}
	six, err := parseSnmp6([]byte("Udp6InDatagrams 4\nUdp6RcvbufErrors                \t2\n"))
	if err != nil || six["Udp6RcvbufErrors"] != 2 {
		t.Errorf("parseSnmp6 = %v, %v", six, err)
	}
	raw := "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops\n" +
		"    1: 00000000:0001 00000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 123 2 0000000000000000 5\n" +
		"    2: 00000000:003A 00000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 124 2 0000000000000000 2\n"
	if n, err := sumDrops([]byte(raw)); err != nil || n != 7 {
		t.Errorf("sumDrops = %d, %v; want 7", n, err)
	}
	base := map[string]uint64{"Udp:RcvbufErrors": 3, "TcpExt:ListenDrops": 1, "raw:drops": 5}
	now := map[string]uint64{"Udp:RcvbufErrors": 5, "TcpExt:ListenDrops": 1, "raw:drops": 4, "Udp6RcvbufErrors": 1}
	if d := dropsSince(base, now); !reflect.DeepEqual(d, []string{"Udp6RcvbufErrors +1", "Udp:RcvbufErrors +2"}) {
		t.Errorf("dropsSince = %q", d)
	}
}
