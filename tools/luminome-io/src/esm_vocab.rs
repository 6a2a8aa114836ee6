//! The `EsmTokenizer` of the Nucleotide Transformer checkpoints (`vocab.txt`: `<unk> <pad>
//! <mask> <cls> <eos> <bos>`, the 4,096 6-mers, then `A T C G N`), read as `transformers`
//! reads it and applied as it applies it: every vocabulary entry is an unsplittable token and
//! the text is cut at the longest entry that starts at the leftmost uncut position, so a run of
//! six of A/C/G/T is one token and anything shorter (the tail, the bases next to an N) is single
//! bases. `<cls>` starts every record and the end token (`eos_token`, when the tokenizer has
//! one) ends it.

use std::collections::HashMap;

use anyhow::{bail, Context, Result};

use crate::token_dataset::{TokenizerInfo, TokenizerScheme};

/// The tokenizer's description from `vocab.txt`, its parsed `tokenizer_config.json` and
/// `special_tokens_map.json` (which overrides the config, as `from_pretrained` does); absent
/// entries take `EsmTokenizer`'s defaults, a `null` one means none.
pub fn tokenizer_info(
    vocab_txt: &str,
    config: &serde_json::Value,
    special_map: Option<&str>,
) -> Result<TokenizerInfo> {
    let vocab: Vec<String> = vocab_txt.lines().map(|l| l.trim().to_string()).collect();
    let map: Option<serde_json::Value> = special_map
        .map(serde_json::from_str)
        .transpose()
        .context("special_tokens_map.json is not JSON")?;
    let special = |key: &str, default: &str| -> Result<Option<u32>> {
        let given = map
            .as_ref()
            .and_then(|m| m.get(key))
            .or_else(|| config.get(key));
        let name = match given {
            None => Some(default.to_string()),
            Some(serde_json::Value::Null) => None,
            Some(serde_json::Value::String(s)) => Some(s.clone()),
            Some(v) => Some(
                v.get("content")
                    .and_then(|c| c.as_str())
                    .with_context(|| format!("{key} is neither a string nor a token"))?
                    .to_string(),
            ),
        };
        name.map(|n| {
            vocab
                .iter()
                .position(|t| *t == n)
                .map(|i| i as u32)
                .with_context(|| format!("{key} {n:?} is not in vocab.txt"))
        })
        .transpose()
    };
    let pad_id = special("pad_token", "<pad>")?.context("the tokenizer has no pad_token")?;
    let cls_id = special("cls_token", "<cls>")?.context("the tokenizer has no cls_token")?;
    let eos_id = special("eos_token", "<eos>")?;
    let info = TokenizerInfo {
        scheme: TokenizerScheme::EsmVocab,
        pad_id,
        unk_id: special("unk_token", "<unk>")?,
        cls_id: Some(cls_id),
        sep_id: eos_id,
        mask_id: special("mask_token", "<mask>")?,
        add_cls: true,
        add_sep: eos_id.is_some(),
        k: None,
        kmer_step: None,
        hf_tokenizer_json: None,
        vocab,
    };
    EsmVocabEncoder::new(&info)?;
    Ok(info)
}

/// Cuts bases into the vocabulary's tokens, leftmost-longest (see the module documentation).
#[derive(Debug, Clone)]
pub struct EsmVocabEncoder {
    ids: HashMap<Vec<u8>, u32>,
    longest: usize,
    unk: u32,
}

impl EsmVocabEncoder {
    /// From a recorded tokenizer of scheme `esm-vocab`: its tokens made of letters are the ones
    /// bases can form; it must hold the four bases and an `<unk>`.
    pub fn new(info: &TokenizerInfo) -> Result<Self> {
        let mut ids = HashMap::new();
        for (id, token) in info.vocab.iter().enumerate() {
            if !token.is_empty() && token.bytes().all(|b| b.is_ascii_alphabetic()) {
                ids.entry(token.as_bytes().to_vec()).or_insert(id as u32);
            }
        }
        for base in ["A", "C", "G", "T"] {
            if !ids.contains_key(base.as_bytes()) {
                bail!("the vocabulary has no single {base} token: not a DNA vocabulary");
            }
        }
        let unk = info.unk_id.context("the vocabulary has no <unk> token")?;
        let longest = ids.keys().map(Vec::len).max().unwrap_or(1);
        Ok(Self { ids, longest, unk })
    }

    /// Appends the ids of `bases` to `ids` and, with `soft`, one flag per token (1 when any
    /// base it covers is soft-masked) to `soft_out`.
    pub fn encode(
        &self,
        bases: &[u8],
        soft: Option<&[u8]>,
        ids: &mut Vec<u32>,
        soft_out: &mut Vec<u8>,
    ) {
        let mut at = 0;
        while at < bases.len() {
            let most = self.longest.min(bases.len() - at);
            let (len, id) = (1..=most)
                .rev()
                .find_map(|len| self.ids.get(&bases[at..at + len]).map(|&id| (len, id)))
                .unwrap_or((1, self.unk));
            ids.push(id);
            if let Some(s) = soft {
                soft_out.push(u8::from(s[at..at + len].iter().any(|&f| f != 0)));
            }
            at += len;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The published layout at k = 2: 6 specials, the 16 2-mers over A T C G, then A T C G N.
    fn vocab() -> String {
        let mut v = vec!["<unk>", "<pad>", "<mask>", "<cls>", "<eos>", "<bos>"]
            .into_iter()
            .map(String::from)
            .collect::<Vec<_>>();
        for a in "ATCG".chars() {
            for b in "ATCG".chars() {
                v.push(format!("{a}{b}"));
            }
        }
        v.extend(["A", "T", "C", "G", "N"].map(String::from));
        v.join("\n") + "\n"
    }

    fn tokens(info: &TokenizerInfo, bases: &[u8]) -> Vec<String> {
        let mut ids = Vec::new();
        EsmVocabEncoder::new(info)
            .unwrap()
            .encode(bases, None, &mut ids, &mut Vec::new());
        ids.iter()
            .map(|&i| info.vocab[i as usize].clone())
            .collect()
    }

    #[test]
    fn longest_from_the_left_with_single_bases_around_n() {
        let info = tokenizer_info(&vocab(), &serde_json::json!({}), None).unwrap();
        assert_eq!(tokens(&info, b"ACGTA"), ["AC", "GT", "A"]);
        assert_eq!(tokens(&info, b"ANCGT"), ["A", "N", "CG", "T"]);
        assert_eq!(tokens(&info, b"AR"), ["A", "<unk>"]);
        assert_eq!(
            (info.pad_id, info.cls_id, info.sep_id),
            (1, Some(3), Some(4))
        );
        assert!(info.add_cls && info.add_sep);
    }

    #[test]
    fn special_tokens_map_overrides_the_config_and_null_means_none() {
        let config = serde_json::json!({"eos_token": "<eos>"});
        let info = tokenizer_info(&vocab(), &config, Some(r#"{"eos_token": null}"#)).unwrap();
        assert!(!info.add_sep && info.sep_id.is_none());
        let err =
            tokenizer_info(&vocab(), &serde_json::json!({"cls_token": "<s>"}), None).unwrap_err();
        assert!(format!("{err:#}").contains("cls_token \"<s>\" is not in vocab.txt"));
    }

    #[test]
    fn row_spans_follow_the_tokens_before_them() {
        let info = tokenizer_info(&vocab(), &serde_json::json!({}), None).unwrap();
        // <cls> AC GT A N CG T <pad>: spans in bases, none for <cls> and padding.
        let mut ids = vec![3];
        EsmVocabEncoder::new(&info)
            .unwrap()
            .encode(b"ACGTANCGT", None, &mut ids, &mut Vec::new());
        ids.push(info.pad_id);
        let mask: Vec<u8> = ids.iter().map(|&i| u8::from(i != info.pad_id)).collect();
        let spans = info.row_spans(&ids, &mask);
        let want = [
            None,
            Some((0, 2)),
            Some((2, 4)),
            Some((4, 5)),
            Some((5, 6)),
            Some((6, 8)),
            Some((8, 9)),
            None,
        ];
        assert_eq!(spans, want);
        assert!(info.scheme.has_row_spans() && !info.scheme.has_base_spans());
    }

    #[test]
    fn soft_flags_cover_every_base_of_a_token() {
        let info = tokenizer_info(&vocab(), &serde_json::json!({}), None).unwrap();
        let (mut ids, mut soft) = (Vec::new(), Vec::new());
        EsmVocabEncoder::new(&info).unwrap().encode(
            b"ACGTA",
            Some(&[0, 0, 0, 1, 0]),
            &mut ids,
            &mut soft,
        );
        assert_eq!(soft, [0, 1, 0]);
    }
}
