package policy

import "testing"

// Cited is Name and Revision, also after they change and for a Set that
// Compile did not make.
func TestCited(t *testing.T) {
	f, err := ParseFile("inline.yaml", []byte("apiVersion: turnguard/v1\nkind: RuleSet\nmetadata: {name: t}\nrules:\n  - {id: R, title: r, severity: low, on: ['*'], when: 'true', decision: deny}\n"))
	if err != nil {
		t.Fatal(err)
	}
	rs, err := Compile([]*File{f})
	if err != nil {
		t.Fatal(err)
	}
	check := func(s *Set) {
		t.Helper()
		if n, r := s.Cited(); n != s.Name || r != s.Revision {
			t.Fatalf("Cited() = %v, %v; want %s, %s", n, r, s.Name, s.Revision)
		}
	}
	check(rs)
	if n := testing.AllocsPerRun(10, func() { rs.Cited() }); n != 0 {
		t.Fatalf("Cited of a compiled set: %v allocations", n)
	}
	rs.Revision = "sha256:0123456789abcdef"
	check(rs)
	rs.Name = "other"
	check(rs)
	check(&Set{Name: "test", Revision: "r"})
}
