//! What a message says of its model call beside its content: the usage the provider
//! reported, and when it was sent.

use serde_json::Value;

/// Provider-reported token usage of one model call: `input` is the whole prompt
/// (cache reads and writes included), `output` the answer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    pub input: u64,
    pub output: u64,
}

fn uint(v: &Value, key: &str) -> u64 {
    // Providers send `None` for fields they do not report: those count as zero.
    v.get(key).and_then(Value::as_u64).unwrap_or(0)
}

impl Usage {
    pub fn total(self) -> u64 {
        self.input + self.output
    }

    /// From the provider-specific shapes found in `response_metadata`: Anthropic's raw
    /// `usage` (cache tokens reported apart from `input_tokens`), OpenAI's
    /// `token_usage` / `usage`, Gemini's `usage_metadata`.
    pub fn from_response_metadata(meta: &Value) -> Option<Usage> {
        for key in ["usage", "token_usage"] {
            if let Some(u) = meta.get(key).filter(|u| u.is_object()) {
                let usage = if u.get("prompt_tokens").is_some() {
                    Usage {
                        input: uint(u, "prompt_tokens"),
                        output: uint(u, "completion_tokens"),
                    }
                } else {
                    Usage {
                        input: uint(u, "input_tokens")
                            + uint(u, "cache_creation_input_tokens")
                            + uint(u, "cache_read_input_tokens"),
                        output: uint(u, "output_tokens"),
                    }
                };
                if usage.total() > 0 {
                    return Some(usage);
                }
            }
        }
        let g = meta.get("usage_metadata").filter(|u| u.is_object())?;
        let usage = Usage {
            input: uint(g, "prompt_token_count"),
            output: uint(g, "candidates_token_count"),
        };
        (usage.total() > 0).then_some(usage)
    }
}

/// Seconds since the epoch of an ISO 8601 date-time such as `2025-01-15T10:00:00Z`,
/// `2025-01-15 10:00:00.250+02:00` or `2025-01-15T10:00:00` (taken as UTC).
pub fn parse_iso8601(s: &str) -> Option<f64> {
    let s = s.trim();
    let num = |t: &str| -> Option<i64> {
        (!t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()))
            .then(|| t.parse().ok())
            .flatten()
    };
    let (date, rest) = s.split_at_checked(10)?;
    let mut parts = date.split('-');
    let (y, m, d) = (
        num(parts.next()?)?,
        num(parts.next()?)?,
        num(parts.next()?)?,
    );
    if parts.next().is_some() || !(1..=12).contains(&m) || !(1..=31).contains(&d) {
        return None;
    }
    let rest = rest.strip_prefix(['T', 't', ' '])?;
    // Split off the zone: Z, or +HH:MM / -HH:MM after the time.
    let (time, offset) = if let Some(t) = rest.strip_suffix(['Z', 'z']) {
        (t, 0)
    } else if let Some(at) = rest.rfind(['+', '-']) {
        let (t, zone) = rest.split_at(at);
        let sign = if zone.starts_with('-') { -1 } else { 1 };
        let mut hm = zone[1..].split(':');
        let (h, mi) = (num(hm.next()?)?, num(hm.next().unwrap_or("0"))?);
        (t, sign * (h * 3600 + mi * 60))
    } else {
        (rest, 0)
    };
    let mut hms = time.split(':');
    let (h, mi) = (num(hms.next()?)?, num(hms.next()?)?);
    let sec: f64 = match hms.next() {
        Some(sec) => sec.parse().ok().filter(|v: &f64| (0.0..61.0).contains(v))?,
        None => 0.0,
    };
    if h > 23 || mi > 59 {
        return None;
    }
    // Days since the epoch of a proleptic Gregorian date (Howard Hinnant's algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some((days * 86_400 + h * 3_600 + mi * 60 - offset) as f64 + sec)
}
