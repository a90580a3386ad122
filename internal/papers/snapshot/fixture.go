package snapshot

import (
	"fmt"
	"github.com/pdpp-mcp/pdpp-mcp/internal/papers/assets"
	"strings"
	"unicode/utf8"
)

// Keys of the fixture papers that tests and the demo single out.
const (
	// KeyViT has three templates (preferred deep_read), a DOI, BibTeX and
	// zh and ja translations; its title matches "vision transformer".
	KeyViT = "vit-scale"
	// KeyLongSource has a source markdown of more than 60,000 characters
	// that ends with LongSourceEndMarker.
	KeyLongSource = "long-documents"
	// KeyNoSource has a NULL source hash.
	KeyNoSource = "federated-heterogeneous"
	// KeyMissingAsset lists template deep_read, whose asset file is not
	// written.
	KeyMissingAsset = "contrastive-visual"
	// KeyBrokenSummary lists template critical_review, whose asset is not
	// JSON.
	KeyBrokenSummary = "masked-autoencoders"
	// KeyChinese has a Chinese title, summary and source.
	KeyChinese = "cjk-medical-segmentation"
	// KeyJapanese has a Japanese title and summary.
	KeyJapanese = "cjk-llm-reasoning"
	// KeyUnknowns has no year, month, venue or DOI.
	KeyUnknowns = "adversarial-robustness"
	// KeyDecision is tagged "transformers" but has no transformer keyword.
	KeyDecision = "decision-transformer"
)

// LongSourceEndMarker is the last word of KeyLongSource's source.
const LongSourceEndMarker = "zetaendmarker"

// Templates used by the fixture.
const (
	TemplateSimple   = "simple"
	TemplateDeepRead = "deep_read"
	TemplateCritical = "critical_review"
)

// FixtureOptions are the options that make Fixture's faults real: the
// missing deep_read asset of KeyMissingAsset and the non-JSON
// critical_review asset of KeyBrokenSummary.
func FixtureOptions() Options {
	return Options{
		OmitAssets: []string{assets.TemplateSummaryPath(PaperID(KeyMissingAsset), TemplateDeepRead)},
		RawAssets: map[string]string{
			assets.TemplateSummaryPath(PaperID(KeyBrokenSummary), TemplateCritical): "{\"paper_title\": \"Masked Autoencoders\", \"summary\": \"cut off here\n",
		},
	}
}

// BuildFixture writes Fixture with FixtureOptions into dir; legacy writes
// the older format (no doi column, no paper_bibtex table).
func BuildFixture(dir string, legacy bool) (*Snapshot, error) {
	opt := FixtureOptions()
	opt.Legacy = legacy
	return Build(dir, Fixture(), opt)
}

// fixtureRow is the hand-chosen part of a fixture paper; the texts are
// generated from it.
type fixtureRow struct {
	key, title, year, month, venue, doi string
	authors, keywords, tags, insts      []string
	templates                           []string // first is preferred
	translations                        []string // languages
	topic                               string   // words the generated text is about
}

// fixtureRows is the library: 30 papers. Authors are skewed (alice zhang 9
// papers; bob li and carol wu tie at 6; dan kim 4; erin park and frank
// chen tie at 3; six authors at 2), keywords include "transformer" (6
// papers) and "vision transformer" (3).
var fixtureRows = []fixtureRow{
	{key: KeyViT, title: "Vision Transformers for Image Recognition at Scale", year: "2021", month: "05", venue: "ICLR", doi: "10.48550/fixture.2021.001",
		authors: []string{"Alice Zhang", "Bob Li", "Hana Sato"}, keywords: []string{"Vision Transformer", "image classification"}, tags: []string{"cv"}, insts: []string{"Tsinghua University"},
		templates: []string{TemplateDeepRead, TemplateSimple, TemplateCritical}, translations: []string{"zh", "ja"}, topic: "image patches attention classification"},
	{key: "attention-layers", title: "Attention Layers for Sequence Transduction", year: "2017", month: "06", venue: "NeurIPS", doi: "10.48550/fixture.2017.002",
		authors: []string{"Alice Zhang", "Carol Wu", "Ivan Petrov"}, keywords: []string{"transformer", "machine translation"}, tags: []string{"nlp"}, insts: []string{"Stanford University"},
		templates: []string{TemplateSimple, TemplateDeepRead}, translations: []string{"zh"}, topic: "self-attention encoder decoder translation"},
	{key: "bidirectional-pretraining", title: "Deep Bidirectional Transformer Pretraining for Language Understanding", year: "2019", month: "06", venue: "ACL", doi: "10.48550/fixture.2019.003",
		authors: []string{"Bob Li", "Carol Wu"}, keywords: []string{"transformer", "pretraining"}, tags: []string{"nlp"}, insts: []string{"MIT"},
		templates: []string{TemplateSimple, TemplateDeepRead}, topic: "masked language modeling pretraining finetuning"},
	{key: "shifted-windows", title: "Shifted Window Attention for Dense Prediction", year: "2021", month: "10", venue: "CVPR", doi: "10.48550/fixture.2021.004",
		authors: []string{"Alice Zhang", "Dan Kim"}, keywords: []string{"vision transformer", "object detection"}, tags: []string{"cv"}, insts: []string{"Tsinghua University"},
		templates: []string{TemplateSimple, TemplateDeepRead}, topic: "windowed attention hierarchy segmentation detection"},
	{key: "data-efficient-image", title: "Data-Efficient Training of Image Transformers", year: "2021", month: "07", venue: "ICML", doi: "10.48550/fixture.2021.005",
		authors: []string{"Bob Li", "Erin Park"}, keywords: []string{"vision transformer", "distillation"}, tags: []string{"cv"}, insts: []string{"MIT"},
		templates: []string{TemplateSimple}, topic: "distillation token augmentation imagenet"},
	{key: "scaling-laws", title: "Scaling Laws for Autoregressive Transformer Language Models", year: "2020", month: "01", venue: "arXiv", doi: "10.48550/fixture.2020.006",
		authors: []string{"Alice Zhang", "Frank Chen"}, keywords: []string{"transformer", "scaling laws"}, tags: []string{"nlp"}, insts: []string{"Stanford University"},
		templates: []string{TemplateSimple, TemplateDeepRead}, topic: "compute parameters loss power law"},
	{key: KeyLongSource, title: "Efficient Attention for Very Long Documents", year: "2020", month: "04", venue: "ACL", doi: "10.48550/fixture.2020.007",
		authors: []string{"Carol Wu", "Grace Liu"}, keywords: []string{"transformer", "long context"}, tags: []string{"nlp"}, insts: []string{"MIT"},
		templates: []string{TemplateSimple, TemplateDeepRead}, topic: "sparse attention sliding window long documents"},
	{key: "text-to-text", title: "A Unified Text-to-Text Transformer Framework", year: "2020", month: "07", venue: "ICML", doi: "10.48550/fixture.2020.008",
		authors: []string{"Bob Li", "Carol Wu"}, keywords: []string{"transformer", "transfer learning"}, tags: []string{"nlp"}, insts: []string{"Stanford University"},
		templates: []string{TemplateSimple}, topic: "text to text transfer benchmark"},
	{key: "denoising-diffusion", title: "Denoising Diffusion Probabilistic Models Revisited", year: "2020", month: "12", venue: "NeurIPS", doi: "10.48550/fixture.2020.009",
		authors: []string{"Dan Kim", "Erin Park"}, keywords: []string{"diffusion model", "generative model"}, tags: []string{"generative"}, insts: []string{"UC Berkeley"},
		templates: []string{TemplateSimple, TemplateDeepRead}, topic: "denoising noise schedule sampling"},
	{key: "latent-diffusion", title: "High-Resolution Image Synthesis with Latent Diffusion", year: "2022", month: "06", venue: "CVPR", doi: "10.48550/fixture.2022.010",
		authors: []string{"Alice Zhang", "Dan Kim"}, keywords: []string{"diffusion model", "image synthesis"}, tags: []string{"generative", "cv"}, insts: []string{"Tsinghua University"},
		templates: []string{TemplateDeepRead, TemplateSimple}, topic: "latent space autoencoder synthesis"},
	{key: "score-sde", title: "Score-Based Generative Modeling through Stochastic Differential Equations", year: "2021", month: "05", venue: "ICLR", doi: "10.48550/fixture.2021.011",
		authors: []string{"Frank Chen", "Jack Brown"}, keywords: []string{"diffusion model", "score matching"}, tags: []string{"generative"}, insts: []string{"Stanford University"},
		templates: []string{TemplateSimple}, topic: "score matching stochastic differential equations"},
	{key: "guidance-free", title: "Classifier-Free Guidance for Diffusion Sampling", year: "2022", month: "07", venue: "NeurIPS",
		authors: []string{"Alice Zhang"}, keywords: []string{"diffusion model"}, tags: []string{"generative"}, insts: []string{"Tsinghua University"},
		templates: []string{TemplateSimple}, topic: "conditional guidance sampling quality"},
	{key: "deep-q", title: "Human-Level Control through Deep Reinforcement Learning", year: "2015", month: "02", venue: "Nature", doi: "10.48550/fixture.2015.013",
		authors: []string{"Bob Li", "Kate Moore"}, keywords: []string{"reinforcement learning", "atari"}, tags: []string{"rl"}, insts: []string{"UC Berkeley"},
		templates: []string{TemplateSimple, TemplateDeepRead}, topic: "q learning replay atari control"},
	{key: "proximal-policy", title: "Proximal Policy Optimization with Clipped Objectives", year: "2017", month: "07", venue: "arXiv", doi: "10.48550/fixture.2017.014",
		authors: []string{"Carol Wu", "Leo Garcia"}, keywords: []string{"reinforcement learning", "policy gradient"}, tags: []string{"rl"}, insts: []string{"UC Berkeley"},
		templates: []string{TemplateSimple}, topic: "policy gradient clipping surrogate objective"},
	{key: "self-play", title: "Mastering Board Games by Self-Play without Human Knowledge", year: "2018", month: "12", venue: "Science", doi: "10.48550/fixture.2018.015",
		authors: []string{"Dan Kim", "Mia Rossi"}, keywords: []string{"reinforcement learning", "self-play"}, tags: []string{"rl"}, insts: []string{"MIT"},
		templates: []string{TemplateSimple}, topic: "tree search self play board games"},
	{key: KeyDecision, title: "Decision Sequence Models for Offline Reinforcement Learning", year: "2021", month: "06", venue: "NeurIPS", doi: "10.48550/fixture.2021.016",
		authors: []string{"Alice Zhang", "Erin Park"}, keywords: []string{"reinforcement learning", "offline rl"}, tags: []string{"rl", "Transformers"}, insts: []string{"UC Berkeley"},
		templates: []string{TemplateSimple}, topic: "return conditioned sequence modeling offline"},
	{key: "graph-convolution", title: "Semi-Supervised Classification with Graph Convolutional Networks", year: "2017", month: "04", venue: "ICLR", doi: "10.48550/fixture.2017.017",
		authors: []string{"Grace Liu", "Nina Berg"}, keywords: []string{"graph neural network"}, tags: []string{"graphs"}, insts: []string{"ETH Zurich"},
		templates: []string{TemplateSimple}, topic: "graph convolution spectral semi supervised"},
	{key: "graph-attention", title: "Graph Attention Networks", year: "2018", month: "04", venue: "ICLR", doi: "10.48550/fixture.2018.018",
		authors: []string{"Bob Li", "Omar Haddad"}, keywords: []string{"graph neural network", "attention"}, tags: []string{"graphs"}, insts: []string{"ETH Zurich"},
		templates: []string{TemplateSimple, TemplateDeepRead}, topic: "masked attention neighbourhood nodes"},
	{key: "inductive-graphs", title: "Inductive Representation Learning on Large Graphs", year: "2017", month: "12", venue: "NeurIPS", doi: "10.48550/fixture.2017.019",
		authors: []string{"Carol Wu", "Paul Novak"}, keywords: []string{"graph neural network"}, tags: []string{"graphs"}, insts: []string{"Stanford University"},
		templates: []string{TemplateSimple}, topic: "neighbourhood sampling aggregation inductive"},
	{key: KeyNoSource, title: "Federated Learning with Heterogeneous Clients", year: "2023", month: "03", venue: "ICML", doi: "10.48550/fixture.2023.020",
		authors: []string{"Alice Zhang", "Quinn Taylor"}, keywords: []string{"federated learning"}, tags: []string{"privacy"}, insts: []string{"ETH Zurich"},
		templates: []string{TemplateSimple}, topic: "federated clients heterogeneity privacy"},
	{key: KeyMissingAsset, title: "Contrastive Learning of Visual Representations", year: "2020", month: "07", venue: "ICML", doi: "10.48550/fixture.2020.021",
		authors: []string{"Alice Zhang", "Rosa Diaz"}, keywords: []string{"contrastive learning", "self-supervised learning"}, tags: []string{"cv"}, insts: []string{"Tsinghua University"},
		templates: []string{TemplateSimple, TemplateDeepRead}, topic: "contrastive augmentation views representations"},
	{key: KeyBrokenSummary, title: "Masked Autoencoders Are Scalable Vision Learners", year: "2022", month: "06", venue: "CVPR", doi: "10.48550/fixture.2022.022",
		authors: []string{"Sam Lee", "Tom Fischer"}, keywords: []string{"self-supervised learning", "masked modeling"}, tags: []string{"cv"}, insts: []string{"MIT"},
		templates: []string{TemplateSimple, TemplateCritical}, topic: "masking patches reconstruction pretraining"},
	{key: KeyChinese, title: "视觉变换器在医学图像分割中的应用", year: "2023", month: "09", venue: "中国图象图形学报",
		authors: []string{"王伟", "李娜"}, keywords: []string{"医学图像", "transformer"}, tags: []string{"医学"}, insts: []string{"北京大学"},
		templates: []string{TemplateSimple}, translations: []string{"en"}, topic: "医学图像分割"},
	{key: KeyJapanese, title: "大規模言語モデルの推論能力に関する研究", year: "2024", month: "02", venue: "情報処理学会論文誌",
		authors: []string{"佐藤花子", "Hana Sato"}, keywords: []string{"大規模言語モデル"}, tags: []string{"nlp"}, insts: []string{"東京大学"},
		templates: []string{TemplateSimple}, topic: "推論能力"},
	{key: KeyUnknowns, title: "On the Robustness of Neural Networks to Adversarial Examples",
		authors: []string{"Uma Patel"}, keywords: []string{"adversarial robustness"}, tags: []string{"security"},
		templates: []string{TemplateSimple}, topic: "adversarial perturbations robustness defenses"},
	{key: "retrieval-augmented", title: "Retrieval-Augmented Generation for Knowledge-Intensive Tasks", year: "2020", month: "05", venue: "NeurIPS", doi: "10.48550/fixture.2020.026",
		authors: []string{"Victor Nguyen", "Wendy Olsen"}, keywords: []string{"retrieval", "question answering"}, tags: []string{"nlp"}, insts: []string{"MIT"},
		templates: []string{TemplateSimple, TemplateDeepRead}, topic: "retrieval dense passages generation"},
	{key: "language-supervision", title: "Learning Transferable Visual Models from Natural Language Supervision", year: "2021", month: "02", venue: "ICML", doi: "10.48550/fixture.2021.027",
		authors: []string{"Xavier Dupont", "Yara Haddad"}, keywords: []string{"contrastive learning", "multimodal"}, tags: []string{"cv", "nlp"}, insts: []string{"Stanford University"},
		templates: []string{TemplateSimple}, topic: "image text pairs zero shot"},
	{key: "low-rank-adaptation", title: "Low-Rank Adaptation of Large Language Models", year: "2022", month: "04", venue: "ICLR", doi: "10.48550/fixture.2022.028",
		authors: []string{"Zoe Wright", "Ivan Petrov"}, keywords: []string{"fine-tuning", "large language models"}, tags: []string{"nlp"}, insts: []string{"ETH Zurich"},
		templates: []string{TemplateSimple, TemplateDeepRead}, topic: "low rank adapters efficient finetuning"},
	{key: "selective-state-space", title: "Selective State Space Models for Linear-Time Sequence Modeling", year: "2024", month: "01", venue: "arXiv", doi: "10.48550/fixture.2024.029",
		authors: []string{"Frank Chen", "Zoe Wright"}, keywords: []string{"state space models", "long context"}, tags: []string{"nlp"}, insts: []string{"UC Berkeley"},
		templates: []string{TemplateSimple}, topic: "selective scan linear time recurrence"},
	{key: "mixture-of-experts", title: "Sparse Mixture-of-Experts Layers for Scaling Language Models", year: "2022", month: "01", venue: "JMLR", doi: "10.48550/fixture.2022.030",
		authors: []string{"Jack Brown", "Kate Moore"}, keywords: []string{"mixture of experts", "scaling laws"}, tags: []string{"nlp"}, insts: []string{"UC Berkeley"},
		templates: []string{TemplateSimple}, topic: "routing experts sparsity capacity"},
}

// Fixture returns the 30-paper library. Every call returns fresh values.
func Fixture() []Paper {
	out := make([]Paper, 0, len(fixtureRows))
	for _, r := range fixtureRows {
		out = append(out, fixturePaper(r))
	}
	return out
}

func fixturePaper(r fixtureRow) Paper {
	cjk := strings.IndexFunc(r.title, func(c rune) bool { return c > 0x2E80 }) >= 0
	p := Paper{
		Key: r.key, Title: r.title, Year: r.year, Month: r.month, Venue: r.venue, DOI: r.doi,
		Authors: r.authors, Keywords: r.keywords, Tags: r.tags, Institutions: r.insts,
		Preferred: r.templates[0],
	}
	if cjk {
		p.Abstract = cjkAbstract(r)
	} else {
		p.Abstract = fmt.Sprintf("We study %s. The work on %s shows that %s matter for %s.",
			strings.ToLower(r.title), r.topic, strings.Join(r.keywords, " and "), strings.Fields(r.topic)[0])
	}
	for _, tpl := range r.templates {
		p.Summaries = append(p.Summaries, Summary{Template: tpl, Markdown: summaryMarkdown(r, tpl, p.Abstract, cjk)})
	}
	switch r.key {
	case KeyNoSource:
	case KeyLongSource:
		p.Source = longSource(r)
	default:
		p.Source = sourceMarkdown(r, p.Abstract, 3)
	}
	if len(r.translations) > 0 {
		p.Translations = map[string]string{}
		for _, lang := range r.translations {
			p.Translations[lang] = translation(r, lang)
		}
	}
	if r.doi != "" {
		p.BibTeX = fmt.Sprintf("@inproceedings{%s,\n  title = {%s},\n  author = {%s},\n  year = {%s},\n  doi = {%s}\n}\n",
			strings.ReplaceAll(r.key, "-", "_"), r.title, strings.Join(r.authors, " and "), r.year, r.doi)
	}
	return p
}

func cjkAbstract(r fixtureRow) string {
	if r.key == KeyJapanese {
		return "本研究では大規模言語モデルの推論能力を評価し、段階的な思考が推論の精度を高めることを示す。"
	}
	return "本文提出一种基于视觉变换器的医学图像分割方法，在多个公开数据集上取得了更高的分割精度。"
}

func summaryMarkdown(r fixtureRow, tpl, abstract string, cjk bool) string {
	if cjk {
		return fmt.Sprintf("## 概要\n\n%s\n\n## 要点\n\n- %s\n- %s\n", abstract, r.title, strings.Join(r.keywords, "、"))
	}
	var b strings.Builder
	switch tpl {
	case TemplateDeepRead:
		fmt.Fprintf(&b, "## Background\n\n%s\n\n## Method\n\nThe method of %q builds on %s.\n\n", abstract, r.title, r.topic)
		fmt.Fprintf(&b, "## Results\n\nExperiments on %s improve over strong baselines.\n\n## Limitations\n\nThe study of %s leaves open questions.\n", r.topic, strings.Join(r.keywords, ", "))
	case TemplateCritical:
		fmt.Fprintf(&b, "## Strengths\n\n%s\n\n## Weaknesses\n\nThe evaluation of %s is narrow.\n", abstract, r.topic)
	default:
		fmt.Fprintf(&b, "## Summary\n\n%s\n\n## Key points\n\n- Topic: %s\n- Keywords: %s\n", abstract, r.topic, strings.Join(r.keywords, ", "))
	}
	return b.String()
}

func sourceMarkdown(r fixtureRow, abstract string, sections int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n%s\n\n## Abstract\n\n%s\n", r.title, strings.Join(r.authors, ", "), abstract)
	names := []string{"Introduction", "Related Work", "Method", "Experiments", "Discussion", "Conclusion"}
	for i := range sections {
		name := names[i%len(names)]
		fmt.Fprintf(&b, "\n## %d %s\n\n", i+1, name)
		for j := range 3 {
			fmt.Fprintf(&b, "Paragraph %d.%d of %s discusses %s in the context of %s. ", i+1, j+1, strings.ToLower(name), r.topic, strings.Join(r.keywords, " and "))
			b.WriteString("The analysis relates the design to prior results and reports measured effects.\n\n")
		}
	}
	return b.String()
}

// longSource is a source of more than 60,000 characters ending with
// LongSourceEndMarker.
func longSource(r fixtureRow) string {
	var b strings.Builder
	b.WriteString(sourceMarkdown(r, "Long documents need attention that scales.", 1))
	for i := 0; utf8.RuneCountInString(b.String()) < 61000; i++ {
		fmt.Fprintf(&b, "\n## Appendix %d\n\nSection %d repeats the sparse attention analysis for window size %d, covering sliding windows, global tokens and dilation over long documents.\n", i+1, i+1, 64*(i+1))
	}
	b.WriteString("\nThe final word of this source is " + LongSourceEndMarker + "\n")
	return b.String()
}

func translation(r fixtureRow, lang string) string {
	switch lang {
	case "zh":
		return fmt.Sprintf("# %s（中文译文）\n\n本文研究视觉变换器与注意力机制。主题：%s。\n", r.title, r.topic)
	case "ja":
		return fmt.Sprintf("# %s（日本語訳）\n\n本論文は画像認識のためのトランスフォーマーを研究する。\n", r.title)
	default:
		return fmt.Sprintf("# %s (English translation)\n\nThis paper applies vision transformers to medical image segmentation.\n", r.title)
	}
}
