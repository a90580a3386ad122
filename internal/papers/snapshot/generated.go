package snapshot

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// vocabulary is the word pool of Generated papers.
var vocabulary = strings.Fields(`attention transformer diffusion graph reinforcement policy gradient
convolution recurrent memory retrieval generation contrastive supervised federated privacy robustness
adversarial segmentation detection classification translation summarization reasoning planning control
robotics vision language speech audio video multimodal embedding representation pretraining finetuning
distillation pruning quantization sparse dense latent variational bayesian kernel optimization convex
stochastic sampling inference causal temporal spatial hierarchical modular scalable efficient benchmark
evaluation dataset synthetic curriculum meta transfer continual lifelong uncertainty calibration
fairness interpretability explanation symbolic neural hybrid compression tokenizer decoder encoder`)

// Generated returns n random papers drawn deterministically from seed:
// titles, summaries and short sources over a fixed vocabulary, authors
// and keywords with a skewed (Zipf) popularity.
func Generated(n int, seed uint64) []Paper {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	authorZipf := rand.NewZipf(rng, 1.2, 1, 1999)
	keywordZipf := rand.NewZipf(rng, 1.1, 1, 299)
	venues := []string{"NeurIPS", "ICML", "ICLR", "CVPR", "ACL", "EMNLP", "AAAI", "arXiv", "JMLR", "TPAMI"}
	words := func(k int) string {
		w := make([]string, k)
		for i := range w {
			w[i] = vocabulary[rng.IntN(len(vocabulary))]
		}
		return strings.Join(w, " ")
	}
	out := make([]Paper, n)
	for i := range out {
		title := strings.ToUpper(words(1)[:1]) + words(7)[1:]
		var authors, keywords []string
		for range 1 + rng.IntN(4) {
			authors = append(authors, fmt.Sprintf("Author %04d", authorZipf.Uint64()))
		}
		for range 1 + rng.IntN(3) {
			keywords = append(keywords, fmt.Sprintf("%s %s", vocabulary[keywordZipf.Uint64()%uint64(len(vocabulary))], vocabulary[(keywordZipf.Uint64()*7)%uint64(len(vocabulary))]))
		}
		abstract := words(40) + "."
		summary := "## Summary\n\n" + abstract + "\n\n## Method\n\n" + words(60) + ".\n"
		var src strings.Builder
		fmt.Fprintf(&src, "# %s\n\n", title)
		for range 4 {
			src.WriteString(words(45) + ".\n\n")
		}
		out[i] = Paper{
			Key:       fmt.Sprintf("generated-%06d", i),
			Title:     title,
			Year:      fmt.Sprint(2000 + rng.IntN(25)),
			Month:     fmt.Sprintf("%02d", 1+rng.IntN(12)),
			Venue:     venues[rng.IntN(len(venues))],
			DOI:       fmt.Sprintf("10.0000/generated.%06d", i),
			Authors:   authors,
			Keywords:  keywords,
			Tags:      []string{vocabulary[rng.IntN(20)]},
			Abstract:  abstract,
			Summaries: []Summary{{Template: TemplateSimple, Markdown: summary}},
			Preferred: TemplateSimple,
			Source:    src.String(),
		}
	}
	return out
}
