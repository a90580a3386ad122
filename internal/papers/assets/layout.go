package assets

// The asset layout of a paper snapshot, relative to the asset root.

// PreferredSummaryPath holds a paper's summary JSON in its preferred
// template.
func PreferredSummaryPath(paperID string) string { return "summary/" + paperID + ".json" }

// TemplateSummaryPath holds a paper's summary JSON in one template.
func TemplateSummaryPath(paperID, template string) string {
	return "summary/" + paperID + "/" + template + ".json"
}

// SourcePath holds a source markdown by its content hash.
func SourcePath(hash string) string { return "md/" + hash + ".md" }

// TranslationPath holds a translated markdown by language and content hash.
func TranslationPath(lang, hash string) string { return "md_translate/" + lang + "/" + hash + ".md" }
