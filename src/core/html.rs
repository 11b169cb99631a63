//! The visible text of an HTML page, by html5ever's HTML5 tokenizer (the
//! spec's tokenizer: entities, comments, CDATA, raw-text elements as a
//! browser reads them): markup, attributes, comments, `<head>`, scripts,
//! styles and templates are left out; block elements end lines, so the
//! text keeps the page's paragraphs as lines (which `segments` and the
//! `boilerplate` setting work on). [`main_text`] also leaves out the page's
//! chrome by structure: `nav`, `header`, `footer` and `aside` elements.
//!
//! Cost: one pass of the tokenizer over the page, linear in its length; no
//! tree is built.
//!
//! Reference: the WHATWG HTML tokenizer (html.spec.whatwg.org, section
//! 13.2.5), as html5ever implements it.

use std::cell::{Cell, RefCell};

use super::halt::{never, Halt};

use html5ever::tendril::StrTendril;
use html5ever::tokenizer::states::RawKind;
use html5ever::tokenizer::{
    BufferQueue, TagKind, Token, TokenSink, TokenSinkResult, Tokenizer, TokenizerOpts,
};

/// Elements whose content is never shown.
const HIDDEN: [&str; 7] = [
    "head", "script", "style", "template", "noscript", "svg", "math",
];

/// Elements that hold a page's chrome rather than its content, left out by
/// [`main_text`].
const CHROME: [&str; 4] = ["nav", "header", "footer", "aside"];

/// Elements that start and end a line of text.
const BLOCKS: [&str; 44] = [
    "address",
    "article",
    "aside",
    "blockquote",
    "body",
    "br",
    "caption",
    "center",
    "dd",
    "details",
    "dialog",
    "div",
    "dl",
    "dt",
    "fieldset",
    "figcaption",
    "figure",
    "footer",
    "form",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "header",
    "hr",
    "html",
    "legend",
    "li",
    "main",
    "nav",
    "ol",
    "p",
    "pre",
    "section",
    "summary",
    "table",
    "td",
    "th",
    "tr",
    "ul",
    "option",
    "title",
];

/// Collects the text as the tokenizer hands it over.
#[derive(Default)]
struct Collector {
    out: RefCell<String>,
    /// Open hidden elements (their content is dropped).
    hidden: Cell<usize>,
    /// Whether a space is owed before the next word on this line.
    space: Cell<bool>,
    /// Whether the chrome elements are hidden too ([`main_text`]).
    main: bool,
}

impl Collector {
    fn line_break(&self) {
        let mut out = self.out.borrow_mut();
        if !out.is_empty() && !out.ends_with('\n') {
            out.push('\n');
        }
        self.space.set(false);
    }

    fn text(&self, t: &str) {
        if self.hidden.get() > 0 {
            return;
        }
        let mut out = self.out.borrow_mut();
        for (i, word) in t.split(char::is_whitespace).enumerate() {
            if i > 0 {
                self.space.set(true);
            }
            if word.is_empty() {
                continue;
            }
            if self.space.get() && !out.is_empty() && !out.ends_with('\n') {
                out.push(' ');
            }
            self.space.set(false);
            out.push_str(word);
        }
    }
}

impl TokenSink for Collector {
    type Handle = ();

    fn process_token(&self, token: Token, _line: u64) -> TokenSinkResult<()> {
        match token {
            Token::CharacterTokens(t) => self.text(&t),
            Token::TagToken(tag) => {
                let name: &str = &tag.name;
                let hidden = HIDDEN.contains(&name) || (self.main && CHROME.contains(&name));
                match tag.kind {
                    TagKind::StartTag => {
                        if hidden && !tag.self_closing {
                            self.hidden.set(self.hidden.get() + 1);
                        }
                        if BLOCKS.contains(&name) {
                            self.line_break();
                        }
                        // The tokenizer alone does not know which elements
                        // hold raw text: the tree builder would tell it.
                        if !tag.self_closing {
                            match name {
                                "script" => return TokenSinkResult::RawData(RawKind::ScriptData),
                                "style" | "xmp" | "iframe" | "noembed" | "noframes" => {
                                    return TokenSinkResult::RawData(RawKind::Rawtext)
                                }
                                "title" | "textarea" => {
                                    return TokenSinkResult::RawData(RawKind::Rcdata)
                                }
                                "plaintext" => return TokenSinkResult::Plaintext,
                                _ => {}
                            }
                        }
                    }
                    TagKind::EndTag => {
                        if hidden {
                            self.hidden.set(self.hidden.get().saturating_sub(1));
                        }
                        if BLOCKS.contains(&name) {
                            self.line_break();
                        }
                    }
                }
            }
            _ => {}
        }
        TokenSinkResult::Continue
    }
}

/// The visible text of `html`: one line per block, words separated by one
/// space, no empty lines.
///
/// ```
/// use dedup::core::html::html_text;
/// let page = "<html><head><title>T</title><style>p{}</style></head><body>\
///             <p>One &amp; <b>two</b></p><script>var x = '<p>no</p>';</script>\
///             <!-- hidden --><div>Three<br>four</div></body></html>";
/// assert_eq!(html_text(page), "One & two\nThree\nfour");
/// ```
pub fn html_text(html: &str) -> String {
    html_text_or_halt(html, &never).unwrap_or_default()
}

/// Pieces the input is fed in, `stop` asked between them.
const PIECE: usize = 1 << 18;

/// [`html_text`] that asks `stop` between pieces of 256 KiB.
pub fn html_text_or_halt(html: &str, stop: &dyn Fn() -> bool) -> Result<String, Halt> {
    text_or_halt(html, false, stop)
}

/// The visible text of `html` without its chrome by structure: the content
/// of `nav`, `header`, `footer` and `aside` elements is left out too (menus,
/// banners, "customers also viewed" boxes), as in [`html_text`] otherwise.
///
/// ```
/// use dedup::core::html::main_text;
/// let page = "<body><header>Shop</header><nav>Home | Cart</nav><main><h1>Boots</h1>\
///             <p>Warm boots.</p><aside>Also viewed: Hats</aside></main><footer>(c) Shop</footer></body>";
/// assert_eq!(main_text(page), "Boots\nWarm boots.");
/// ```
pub fn main_text(html: &str) -> String {
    text_or_halt(html, true, &never).unwrap_or_default()
}

/// [`main_text`] that asks `stop` between pieces of 256 KiB.
pub fn main_text_or_halt(html: &str, stop: &dyn Fn() -> bool) -> Result<String, Halt> {
    text_or_halt(html, true, stop)
}

fn text_or_halt(html: &str, main: bool, stop: &dyn Fn() -> bool) -> Result<String, Halt> {
    let sink = Collector {
        main,
        ..Collector::default()
    };
    let tokenizer = Tokenizer::new(sink, TokenizerOpts::default());
    let input = BufferQueue::default();
    let mut rest = html;
    while !rest.is_empty() {
        let mut cut = rest.len().min(PIECE);
        while !rest.is_char_boundary(cut) {
            cut += 1;
        }
        input.push_back(StrTendril::from_slice(&rest[..cut]));
        let _ = tokenizer.feed(&input);
        rest = &rest[cut..];
        if !rest.is_empty() && stop() {
            return Err(Halt::Stopped);
        }
    }
    tokenizer.end();
    let mut out = tokenizer.sink.out.take();
    while out.ends_with('\n') {
        out.pop();
    }
    Ok(out)
}

/// Whether a text is HTML: after a byte-order mark, white space and
/// comments (`<!-- ... -->`), its first character is `<`, and it has an end
/// tag or begins with a doctype.
pub fn looks_like_html(text: &str) -> bool {
    let mut head = text.trim_start_matches(|c: char| c == '\u{feff}' || c.is_whitespace());
    while let Some(rest) = head.strip_prefix("<!--") {
        match rest.find("-->") {
            Some(end) => {
                head = rest[end + 3..]
                    .trim_start_matches(|c: char| c == '\u{feff}' || c.is_whitespace())
            }
            None => return false,
        }
    }
    head.starts_with('<')
        && (text.contains("</")
            || head[..head.len().min(64)]
                .to_ascii_lowercase()
                .starts_with("<!doctype"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_differ_but_the_text_is_the_same() {
        let article = "<h1>Title</h1><p>First paragraph of the article.</p><p>Second one.</p>";
        let a = format!(
            "<html><head><script>a()</script></head><body><nav>Home</nav>{article}</body></html>"
        );
        let b = format!(
            "<!DOCTYPE html><html><head><style>.x{{}}</style></head><body class=k><nav>Home</nav>\
             <div id=main>{article}</div><script>track()</script></body></html>"
        );
        assert_eq!(html_text(&a), html_text(&b));
        assert_eq!(
            html_text(&a),
            "Home\nTitle\nFirst paragraph of the article.\nSecond one."
        );
    }

    #[test]
    fn raw_text_and_comments_are_not_text() {
        assert_eq!(
            html_text("<p>a</p><script>if (a < b) { x = '</p>'; }</script><p>b</p>"),
            "a\nb"
        );
        assert_eq!(html_text("<p>a<!-- <p>c</p> -->b</p>"), "ab");
        assert_eq!(
            html_text("<textarea><p>shown as text</p></textarea>"),
            "<p>shown as text</p>"
        );
    }

    #[test]
    fn broken_markup_is_read_as_a_browser_would() {
        assert_eq!(html_text("<p>one<p>two"), "one\ntwo");
        assert_eq!(html_text("a &lt;b&gt; &unknown; c"), "a <b> &unknown; c");
        assert_eq!(html_text(""), "");
        assert_eq!(html_text("<"), "<");
    }

    #[test]
    fn what_looks_like_html() {
        assert!(looks_like_html("  <html><body>x</body></html>"));
        assert!(looks_like_html("<!DOCTYPE html><p>x"));
        assert!(!looks_like_html("plain text with a < sign and </ later"));
        assert!(!looks_like_html("<3 is not markup"));
        // Leading lines, a byte-order mark, comments before the doctype.
        assert!(looks_like_html("\n\n<html><p>x</p></html>"));
        assert!(looks_like_html("\u{feff}<!doctype html><p>x"));
        assert!(looks_like_html(
            "\r\n<!-- saved by a crawler -->\n<!-- two -->\t<!DOCTYPE html><p>x"
        ));
        assert!(!looks_like_html("<!-- an unclosed comment <p>x</p>"));
        assert!(!looks_like_html("\u{feff}plain text"));
        assert!(!looks_like_html("<!-- a note --> then plain text </ here"));
    }
}
