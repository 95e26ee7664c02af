package cli

import (
	"fmt"
	"io"

	"github.com/neardup/neardup/store"
	"github.com/neardup/neardup/text"
)

// extractionWarning is the warning for an index of pages' main content
// (--html without --html-all) whose pages were extracted by another
// version of the main-content extraction than this build's
// (text.MainVersion), or by a build that recorded none; "" for any other
// index. The index is still used: its sketches are of the pages as they
// were extracted then.
func extractionWarning(flag, loc string, ix store.Index) string {
	if !store.MainContent(ix.Spec()) || ix.Extraction() == text.MainVersion {
		return ""
	}
	had := fmt.Sprintf("version %d", ix.Extraction())
	if ix.Extraction() == 0 {
		had = "an older neardup, which recorded no version"
	}
	return fmt.Sprintf("neardup: warning: %s %s: the main content of its pages was extracted by %s, and this neardup extracts by version %d: a page is not extracted as it was when it was indexed, and may no longer match its own entry exactly; the index is used as it is. To compare pages extracted alike, create a new index with the same parameters and add the pages again ('index upgrade' keeps the stored sketches)",
		flag, redactLoc(loc), had, text.MainVersion)
}

// printExtraction says, for index stats of an index of pages' main
// content, which version of the extraction made its pages and this
// build's; nothing for another index.
func printExtraction(w io.Writer, st store.Stats) error {
	if !store.MainContent(st.Spec) {
		return nil
	}
	had := fmt.Sprintf("version %d", st.Extraction)
	if st.Extraction == 0 {
		had = "no version recorded (an older neardup)"
	}
	_, err := fmt.Fprintf(w, "extraction:   main content by %s; this neardup extracts by version %d\n", had, text.MainVersion)
	return err
}
