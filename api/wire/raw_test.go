package wire

import (
	"encoding/json"
	"testing"
)

func TestReadable(t *testing.T) {
	tests := []struct {
		name, value string
		raw         string // "" when the value stays as it is
		want        string
	}{
		{"json", `{"a":[1,2]}`, "", `{"a":[1,2]}`},
		{"json string", `"x"`, "", `"x"`},
		{"text", `not json`, RawText, `"not json"`},
		{"text with quotes", `say "hi"`, RawText, `"say \"hi\""`},
		{"two values", `1 2`, RawText, `"1 2"`},
		{"empty", ``, RawText, `""`},
		{"not utf-8", "\xff\xfe", RawBase64, `"//4="`},
		{"half a json string", `"abc`, RawText, `"\"abc"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ops := []Op{{Op: OpPut, Key: "k", Value: json.RawMessage(tt.value)}, {Op: OpDelete, Key: "d"}}
			e, n := LogEntry{Index: 3, Ops: ops}.Readable()
			if got := string(e.Ops[0].Value); got != tt.want || e.Ops[0].Raw != tt.raw || n != map[bool]int{true: 1}[tt.raw != ""] {
				t.Fatalf("Readable() op = %s raw %q (%d changed), want %s raw %q", got, e.Ops[0].Raw, n, tt.want, tt.raw)
			}
			if string(ops[0].Value) != tt.value || ops[0].Raw != "" {
				t.Fatalf("Readable() changed the entry's own ops: %+v", ops[0])
			}
			if e.Ops[1].Value != nil || e.Ops[1].Raw != "" {
				t.Fatalf("Readable() changed a delete: %+v", e.Ops[1])
			}
			if _, err := MarshalJSON(e); err != nil {
				t.Fatalf("MarshalJSON(Readable()) = %v", err)
			}
			kv, raw := KV{Key: "k", Value: json.RawMessage(tt.value)}.Readable()
			if string(kv.Value) != tt.want || kv.Raw != tt.raw || raw != (tt.raw != "") {
				t.Fatalf("KV.Readable() = %s raw %q, want %s raw %q", kv.Value, kv.Raw, tt.want, tt.raw)
			}
		})
	}
}
