//! Ranked search over a conversation's messages, for a model that asks in its own
//! words: BM25F over three fields of each message (its text; the tool it calls or
//! answers; that call's arguments), terms as [`analyze`] makes them. The index grows
//! message by message (a conversation only grows), so a conversation that searches
//! pays for each message once; one that never searches pays nothing.
//!
//! The `recall` tool's own calls and results are not indexed: a search must not find
//! the searches before it.

pub mod analyze;
mod excerpt;
pub mod forms;

use std::collections::HashMap;

use serde_json::Value;

use crate::message::{Message, Role};
use crate::render::content_text;
use analyze::Analyzer;

/// The fields of a message: its text, the tool it calls or answers, that call's
/// arguments.
const FIELDS: usize = 3;
const TEXT: usize = 0;
const NAME: usize = 1;
const ARGS: usize = 2;
/// How much a term counts in each field, and how much a field's length damps it.
const WEIGHTS: [f32; FIELDS] = [1.0, 2.0, 1.0];
const LENGTH_DAMPING: [f32; FIELDS] = [0.75, 0.3, 0.75];
/// How fast repeats of a term stop adding to its weight (BM25's k1).
const SATURATION: f32 = 1.2;
/// The tool whose calls and results are not indexed.
pub const RECALL_TOOL: &str = "recall";

/// A term's count in each field of one message.
#[derive(Clone, Copy, Debug)]
struct Posting {
    doc: u32,
    counts: [u16; FIELDS],
}

/// What the search knows of a message beside its terms.
#[derive(Clone, Debug, Default)]
pub struct Doc {
    pub role: Role,
    /// The tool it calls (its first) or answers.
    pub tool: Option<String>,
    /// The number of the request it belongs to (0 before the first).
    pub request: u32,
    /// A call of `recall` or its result: never found.
    pub skipped: bool,
    /// A user's message that opens its request.
    pub opens: bool,
    /// The agent's text with no tool call: an answer to its request.
    pub answers: bool,
    lengths: [u32; FIELDS],
}

/// What narrows a search.
#[derive(Clone, Debug, Default)]
pub struct Filters {
    pub role: Option<Role>,
    pub tool: Option<String>,
    /// Requests from the first to the last number, both in.
    pub requests: Option<(u32, u32)>,
    /// Leave out the message that opens the newest request: asked from inside the
    /// conversation, that is the request being answered, which the model reads already.
    pub skip_open_request: bool,
}

/// A search.
#[derive(Clone, Debug, Default)]
pub struct Query {
    /// A few words; a part in double quotes is a phrase the message must hold.
    pub text: String,
    /// How many of the best to return.
    pub limit: usize,
    pub filters: Filters,
}

/// A message found, and the passage of it that matched best; for a request, the end
/// of the answer that closed it (where an answer concludes), unless shown already.
#[derive(Clone, Debug, PartialEq)]
pub struct Hit {
    pub index: usize,
    pub score: f32,
    pub excerpt: String,
    pub answer: Option<(usize, String)>,
}

/// The best matches, best first, and how many messages matched in all (an answer
/// shown with its request counted in its request's).
#[derive(Clone, Debug, Default)]
pub struct Found {
    pub hits: Vec<Hit>,
    pub matched: usize,
}

/// A conversation's search index; see the module's documentation.
pub struct Index {
    language: String,
    analyzer: Analyzer,
    vocabulary: HashMap<String, u32>,
    postings: Vec<Vec<Posting>>,
    docs: Vec<Doc>,
    totals: [u64; FIELDS],
    /// Calls whose results have not come yet: their tool and argument terms, which
    /// index the result too.
    open_calls: HashMap<String, (String, Vec<u32>)>,
    requests: u32,
    /// The message that opened the newest request.
    open_request: Option<u32>,
    /// The message that opened each request, in order.
    openers: Vec<u32>,
}

/// The values of a call's arguments as text (keys are the tool's, not the model's).
fn argument_text(value: &Value, out: &mut String) {
    match value {
        Value::String(s) => {
            out.push_str(s);
            out.push('\n');
        }
        Value::Number(n) => {
            out.push_str(&n.to_string());
            out.push(' ');
        }
        Value::Bool(_) | Value::Null => {}
        Value::Array(items) => items.iter().for_each(|v| argument_text(v, out)),
        Value::Object(map) => map.values().for_each(|v| argument_text(v, out)),
    }
}

/// The argument text of all of a message's calls.
pub fn arguments_of(m: &Message) -> String {
    let mut out = String::new();
    for c in m.tool_calls.iter().filter_map(|c| c.args.whole()) {
        argument_text(c, &mut out);
    }
    out
}

/// Whether a message opens a request: a user's, with text (a user message of tool
/// results, Anthropic's shape after parallel calls, is the tool's answer).
fn opens_request(m: &Message, text: &str) -> bool {
    m.answering_role() == Role::Human && crate::memory::requests::says_something(text)
}

impl Index {
    /// An empty index whose terms are stemmed for `language` (see
    /// [`analyze::LANGUAGES`]); `None` for a language it does not know.
    pub fn new(language: &str) -> Option<Index> {
        Some(Index {
            language: language.trim().to_lowercase(),
            analyzer: Analyzer::for_language(language)?,
            vocabulary: HashMap::new(),
            postings: Vec::new(),
            docs: Vec::new(),
            totals: [0; FIELDS],
            open_calls: HashMap::new(),
            requests: 0,
            open_request: None,
            openers: Vec::new(),
        })
    }

    /// The language its terms are stemmed for.
    pub fn language(&self) -> &str {
        &self.language
    }

    /// How many messages it holds.
    pub fn len(&self) -> usize {
        self.docs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.docs.is_empty()
    }

    /// What each message it holds is, in order.
    pub fn docs(&self) -> &[Doc] {
        &self.docs
    }

    /// About what it takes in memory, in bytes.
    pub fn bytes(&self) -> usize {
        let words: usize = self.vocabulary.keys().map(|k| k.len() + 48).sum();
        let postings: usize = self
            .postings
            .iter()
            .map(|p| p.capacity() * std::mem::size_of::<Posting>() + 24)
            .sum();
        let docs = self.docs.capacity() * (std::mem::size_of::<Doc>() + 8);
        words + postings + docs + self.openers.capacity() * 4
    }

    fn term_ids(&mut self, text: &str) -> Vec<u32> {
        let mut terms = Vec::new();
        self.analyzer.terms(text, &mut terms);
        terms
            .into_iter()
            .map(|t| {
                let next = self.vocabulary.len() as u32;
                let id = *self.vocabulary.entry(t).or_insert(next);
                if id as usize == self.postings.len() {
                    self.postings.push(Vec::new());
                }
                id
            })
            .collect()
    }

    /// Take in the next message of the conversation.
    pub fn add(&mut self, m: &Message) {
        let text = content_text(m);
        if opens_request(m, &text) {
            self.requests += 1;
            self.open_request = Some(self.docs.len() as u32);
            self.openers.push(self.docs.len() as u32);
        }
        let doc = self.docs.len() as u32;
        let mut fields: [Vec<u32>; FIELDS] = Default::default();
        let mut tool = None;
        let mut skipped = false;
        let opens = opens_request(m, &text);
        let answers = m.role == Role::Ai && m.tool_calls.is_empty() && !text.trim().is_empty();
        match m.role {
            Role::Ai if !m.tool_calls.is_empty() => {
                let names: Vec<&str> = m.tool_calls.iter().map(|c| c.name.as_str()).collect();
                skipped = names.iter().all(|n| *n == RECALL_TOOL) && text.trim().is_empty();
                for c in &m.tool_calls {
                    let mut args = String::new();
                    // Search reads its messages with their arguments whole.
                    if let Some(v) = c.args.whole() {
                        argument_text(v, &mut args);
                    }
                    let ids = self.term_ids(&args);
                    fields[ARGS].extend(&ids);
                    if let Some(id) = &c.id {
                        self.open_calls.insert(id.clone(), (c.name.clone(), ids));
                    }
                }
                fields[NAME] = self.term_ids(&names.join(" "));
                tool = names.first().map(|n| (*n).to_owned());
            }
            Role::Tool => {
                let call = m
                    .tool_call_id
                    .as_deref()
                    .and_then(|id| self.open_calls.remove(id));
                let name = m
                    .name
                    .clone()
                    .or_else(|| call.as_ref().map(|c| c.0.clone()));
                skipped = name.as_deref() == Some(RECALL_TOOL);
                if let Some(n) = &name {
                    fields[NAME] = self.term_ids(n);
                }
                if let Some((_, ids)) = call {
                    fields[ARGS] = ids;
                }
                tool = name;
            }
            _ => {}
        }
        fields[TEXT] = self.term_ids(&text);
        let mut counts: HashMap<u32, [u16; FIELDS]> = HashMap::new();
        let mut lengths = [0u32; FIELDS];
        for (f, ids) in fields.iter().enumerate() {
            lengths[f] = ids.len() as u32;
            self.totals[f] += ids.len() as u64;
            for id in ids {
                let c = counts.entry(*id).or_insert([0; FIELDS]);
                c[f] = c[f].saturating_add(1);
            }
        }
        for (id, c) in counts {
            self.postings[id as usize].push(Posting { doc, counts: c });
        }
        self.docs.push(Doc {
            role: m.answering_role(),
            tool,
            request: self.requests,
            skipped,
            opens,
            answers,
            lengths,
        });
    }

    /// How rare a term is: BM25's inverse document frequency.
    fn rarity(&self, id: u32) -> f32 {
        let n = self.docs.len() as f32;
        let df = self.postings[id as usize].len() as f32;
        (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
    }

    /// A term's weight in one message, its fields combined (BM25F).
    fn weight(&self, p: &Posting) -> f32 {
        let doc = &self.docs[p.doc as usize];
        let n = self.docs.len().max(1) as f32;
        let mut tf = 0.0;
        for f in 0..FIELDS {
            if p.counts[f] == 0 {
                continue;
            }
            let average = (self.totals[f] as f32 / n).max(1.0);
            let norm =
                1.0 - LENGTH_DAMPING[f] + LENGTH_DAMPING[f] * doc.lengths[f] as f32 / average;
            tf += WEIGHTS[f] * p.counts[f] as f32 / norm;
        }
        tf * (SATURATION + 1.0) / (SATURATION + tf)
    }

    fn passes(&self, doc: usize, f: &Filters) -> bool {
        let d = &self.docs[doc];
        let open = f.skip_open_request && self.open_request == Some(doc as u32);
        !d.skipped
            && !open
            && f.role.is_none_or(|r| r == d.role)
            && f.tool
                .as_deref()
                .is_none_or(|t| d.tool.as_deref() == Some(t))
            && f.requests.is_none_or(|(a, b)| (a..=b).contains(&d.request))
    }

    /// The messages that best match `q`, among `msgs` (the messages the index was
    /// built from, in order: a phrase and the excerpts are read from them). A request
    /// whose message and answer hold between them more of the query than either alone
    /// is scored as one passage and found by the message that opened it.
    pub fn search(&self, msgs: &[&Message], q: &Query) -> Found {
        let phrases = excerpt::phrases(&q.text);
        let groups = self.analyzer.query_groups(&q.text);
        let wanted = groups.len().max(1);
        let ids: Vec<Vec<u32>> = groups
            .iter()
            .map(|g| {
                g.iter()
                    .filter_map(|t| self.vocabulary.get(t).copied())
                    .collect::<Vec<u32>>()
            })
            .filter(|g| !g.is_empty())
            .collect();
        let weights: Vec<HashMap<u32, f32>> = ids.iter().map(|g| self.group_weights(g)).collect();
        let mut scores = Index::scores(&weights);
        if ids.is_empty() && !phrases.is_empty() {
            // A phrase of words no message holds as terms (symbols): read every message.
            scores.extend((0..self.docs.len() as u32).map(|d| (d, (0.0, 0))));
        }
        let held = |d: &u32| {
            phrases.is_empty()
                || msgs
                    .get(*d as usize)
                    .is_some_and(|m| excerpt::holds_all(m, &phrases))
        };
        let mut found: Vec<(u32, f32)> = scores
            .iter()
            .filter(|(d, _)| self.passes(**d as usize, &q.filters))
            .filter(|(d, _)| held(d))
            // Messages that hold more of the query's terms come first at equal weight.
            .map(|(&d, &(s, n))| (d, s * (1.0 + n as f32) / (1.0 + wanted as f32)))
            .collect();
        if phrases.is_empty() && q.filters.role.is_none() && q.filters.tool.is_none() {
            self.passages(&weights, &scores, &q.filters, wanted, &mut found);
        }
        found.sort_by(|a, b| b.1.total_cmp(&a.1).then(b.0.cmp(&a.0)));
        let mut matched = found.len();
        let matching: std::collections::HashSet<u32> = found.iter().map(|f| f.0).collect();
        let rarities: HashMap<&str, f32> = groups
            .iter()
            .flatten()
            .filter_map(|t| {
                self.vocabulary
                    .get(t)
                    .map(|id| (t.as_str(), self.rarity(*id)))
            })
            .collect();
        let mut shown = std::collections::HashSet::new();
        let mut hits = Vec::new();
        for (d, score) in found {
            let d = d as usize;
            if hits.len() == q.limit {
                break;
            }
            let Some(m) = msgs.get(d) else { continue };
            if !shown.insert(d) {
                continue;
            }
            let answer = self
                .answer_to(d)
                .filter(|a| shown.insert(*a))
                .and_then(|a| Some((a, excerpt::ending(msgs.get(a)?))));
            if answer
                .as_ref()
                .is_some_and(|(a, _)| matching.contains(&(*a as u32)))
            {
                matched -= 1;
            }
            hits.push(Hit {
                index: d,
                score,
                excerpt: excerpt::best_passage(&self.analyzer, m, &rarities, &phrases),
                answer,
            });
        }
        Found { hits, matched }
    }

    /// Each message's BM25F score over the query's groups (their weights in each
    /// message, see [`Index::group_weights`]), and how many groups it holds.
    fn scores(weights: &[HashMap<u32, f32>]) -> HashMap<u32, (f32, usize)> {
        let mut scores: HashMap<u32, (f32, usize)> = HashMap::new();
        for group in weights {
            for (&doc, &w) in group {
                let s = scores.entry(doc).or_insert((0.0, 0));
                s.0 += w;
                s.1 += 1;
            }
        }
        scores
    }

    /// A group's weight in each message that holds it: its best alternative's.
    fn group_weights(&self, group: &[u32]) -> HashMap<u32, f32> {
        let mut best: HashMap<u32, f32> = HashMap::new();
        for &id in group {
            let rarity = self.rarity(id);
            for p in &self.postings[id as usize] {
                let b = best.entry(p.doc).or_insert(0.0);
                *b = b.max(rarity * self.weight(p));
            }
        }
        best
    }

    /// Requests scored as passages, from the messages' scores: the groups each holds in
    /// its user's message and the agent's answers (each by its best message), pushed
    /// onto `found` as the message that opened it when they are more of the query than
    /// its best message holds alone.
    fn passages(
        &self,
        weights: &[HashMap<u32, f32>],
        scores: &HashMap<u32, (f32, usize)>,
        filters: &Filters,
        wanted: usize,
        found: &mut Vec<(u32, f32)>,
    ) {
        if weights.len() < 2 {
            return;
        }
        // The request and the agent's answers to it: the words of its many steps between
        // them would add up to any query. Only messages that hold a group take part.
        let mut per_request: HashMap<u32, (Vec<f32>, usize)> = HashMap::new();
        for (&doc, &(_, held)) in scores {
            let d = &self.docs[doc as usize];
            if !d.skipped && d.request > 0 && (d.opens || d.answers) {
                let entry = per_request
                    .entry(d.request)
                    .or_insert_with(|| (vec![0.0; weights.len()], 0));
                entry.1 = entry.1.max(held);
            }
        }
        if per_request.is_empty() {
            return;
        }
        for (g, group) in weights.iter().enumerate() {
            for (&doc, &w) in group {
                let d = &self.docs[doc as usize];
                if let Some(entry) = per_request
                    .get_mut(&d.request)
                    .filter(|_| d.opens || d.answers)
                {
                    entry.0[g] = entry.0[g].max(w);
                }
            }
        }
        for (request, (weights, best_alone)) in per_request {
            let held = weights.iter().filter(|w| **w > 0.0).count();
            if held <= best_alone {
                continue;
            }
            let Some(&opener) = self.openers.get(request as usize - 1) else {
                continue;
            };
            if !self.passes(opener as usize, filters) {
                continue;
            }
            let score = weights.iter().sum::<f32>() * (1.0 + held as f32) / (1.0 + wanted as f32);
            match found.iter_mut().find(|f| f.0 == opener) {
                Some(f) => f.1 = f.1.max(score),
                None => found.push((opener, score)),
            }
        }
    }

    /// The answer that closed the request message `doc` opened: the last answer
    /// before the next request.
    fn answer_to(&self, doc: usize) -> Option<usize> {
        if !self.docs.get(doc)?.opens {
            return None;
        }
        let request = self.docs[doc].request;
        let rest = &self.docs[doc + 1..];
        let within = rest.iter().take_while(|d| d.request == request).count();
        let last = rest[..within].iter().rposition(|d| d.answers)?;
        Some(doc + 1 + last)
    }
}

#[cfg(test)]
mod tests;
