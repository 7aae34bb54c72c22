package cliflag

import (
	"flag"
	"fmt"
	"io"
	"reflect"
	"strings"
)

// PrintDefaults writes fs's flags as flag.PrintDefaults does, but spelled
// --flag, as the README and the error messages spell them (the flag
// package accepts both).
func PrintDefaults(w io.Writer, fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		var b strings.Builder
		fmt.Fprintf(&b, "  --%s", f.Name)
		name, usage := flag.UnquoteUsage(f)
		if name != "" {
			b.WriteString(" " + name)
		}
		b.WriteString("\n    \t")
		b.WriteString(strings.ReplaceAll(usage, "\n", "\n    \t"))
		if !isZeroValue(f) {
			if g, ok := f.Value.(flag.Getter); ok {
				if _, isString := g.Get().(string); isString {
					fmt.Fprintf(&b, " (default %q)", f.DefValue)
				} else {
					fmt.Fprintf(&b, " (default %v)", f.DefValue)
				}
			} else {
				fmt.Fprintf(&b, " (default %v)", f.DefValue)
			}
		}
		fmt.Fprintln(w, b.String())
	})
}

// Usage returns an fs.Usage that writes head, the flags (PrintDefaults)
// and tail to fs's output.
func Usage(fs *flag.FlagSet, head, tail string) func() {
	return func() {
		w := fs.Output()
		fmt.Fprint(w, head)
		PrintDefaults(w, fs)
		if tail != "" {
			fmt.Fprint(w, "\n"+tail)
		}
	}
}

// isZeroValue reports whether a flag's default is its type's zero value,
// which flag.PrintDefaults leaves unsaid; the same test as the flag
// package's own.
func isZeroValue(f *flag.Flag) bool {
	typ := reflect.TypeOf(f.Value)
	var z reflect.Value
	if typ.Kind() == reflect.Pointer {
		z = reflect.New(typ.Elem())
	} else {
		z = reflect.Zero(typ)
	}
	v, ok := z.Interface().(flag.Value)
	if !ok {
		return false
	}
	defer func() { _ = recover() }()
	return f.DefValue == v.String()
}
