package lab

import (
	"reflect"
	"testing"
)

func TestParseTablesReadsNftListTables(t *testing.T) {
	got := parseTables("table inet gatehouse_egress\ntable inet gatehouse_acct\n\nwarning: junk line\n")
	want := []string{"inet gatehouse_acct", "inet gatehouse_egress"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	if AccountingTable != "inet gatehouse_acct" {
		t.Errorf("AccountingTable is %q: the takedown would not spare the accounting", AccountingTable)
	}
}
