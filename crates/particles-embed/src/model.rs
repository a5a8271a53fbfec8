//! The MiniLM forward pass (BERT: 6 layers, 384 hidden, 12 heads), mean pooling
//! and L2 normalisation, in f32, with `faer`'s matrix products for the dense layers
//! and attention (its x86 kernels are chosen at run time, so the binary runs on any
//! x86-64).
//!
//! Sequences are *packed*: the rows of every sequence of a batch are stacked, the
//! dense layers (row-wise) run once over all of them, and attention runs per
//! sequence over its own rows. A packed batch has no padded positions, which is
//! the limit of padding with an attention mask: no position of one text can
//! change another's vector.

use std::{collections::HashMap, io::Read, ops::Range, path::Path};

use faer::{linalg::matmul::matmul, Accum, MatMut, MatRef, Par};

use crate::EmbedError;

/// The shape the weights must have.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Config {
    pub(crate) hidden: usize,
    pub(crate) layers: usize,
    pub(crate) heads: usize,
    pub(crate) intermediate: usize,
    pub(crate) max_positions: usize,
    pub(crate) layer_norm_eps: f32,
}

impl Config {
    pub(crate) fn from_json(text: &str) -> Result<Config, EmbedError> {
        let json: serde_json::Value = serde_json::from_str(text)
            .map_err(|e| EmbedError::Model(format!("config.json: {e}")))?;
        let field = |name: &str| -> Result<usize, EmbedError> {
            json[name]
                .as_u64()
                .map(|v| v as usize)
                .ok_or_else(|| EmbedError::Model(format!("config.json has no integer {name}")))
        };
        let config = Config {
            hidden: field("hidden_size")?,
            layers: field("num_hidden_layers")?,
            heads: field("num_attention_heads")?,
            intermediate: field("intermediate_size")?,
            max_positions: field("max_position_embeddings")?,
            layer_norm_eps: json["layer_norm_eps"].as_f64().unwrap_or(1e-12) as f32,
        };
        if config.heads == 0 || !config.hidden.is_multiple_of(config.heads) {
            return Err(EmbedError::Model(format!(
                "config.json: hidden_size {} is not a multiple of num_attention_heads {}",
                config.hidden, config.heads
            )));
        }
        Ok(config)
    }
}

/// A dense layer: `y = x Wᵀ + b`. The checkpoint stores W `[out, in]` row-major;
/// load turns it, in place, into column-major `[out, in]`, the left operand faer's
/// x86 kernels read without packing it first (packing W on every product was the
/// largest cost of a short question).
struct Linear {
    weight: Range<usize>,
    bias: Range<usize>,
    inputs: usize,
    outputs: usize,
}

struct LayerNorm {
    weight: Range<usize>,
    bias: Range<usize>,
}

struct Layer {
    query: Linear,
    key: Linear,
    value: Linear,
    attention_out: Linear,
    attention_norm: LayerNorm,
    intermediate: Linear,
    output: Linear,
    output_norm: LayerNorm,
}

/// The loaded encoder weights: the checkpoint's data section as one f32 buffer,
/// and where each tensor lies in it.
pub(crate) struct Bert {
    config: Config,
    weights: Weights,
    word_embeddings: Range<usize>,
    vocab_size: usize,
    position_embeddings: Range<usize>,
    token_type_embeddings: Range<usize>,
    embeddings_norm: LayerNorm,
    layers: Vec<Layer>,
}

/// One tensor's entry in the safetensors header.
struct TensorInfo {
    dtype: String,
    shape: Vec<usize>,
    /// Byte offsets in the data section.
    bytes: Range<usize>,
}

/// The longest safetensors header we accept (this model's is 11 kB); a larger one
/// means a damaged or foreign file.
const MAX_HEADER_BYTES: u64 = 16 << 20;

/// The checkpoint's data section as f32 values. (Anonymous memory advised for
/// huge pages was tried: questions ran ~15% faster, but a load cost twice the CPU
/// time zeroing and compacting, a bad trade for one-shot processes.)
struct Weights(Vec<f32>);

impl Weights {
    fn values(&self) -> &[f32] {
        &self.0
    }
}

/// Reads a safetensors file: the tensors named in its header and its data section
/// as f32 values. The data section is read straight into the f32 buffer, one copy
/// from the page cache and no conversion pass (the file is little-endian).
/// `prepare` may rearrange the values before they become read-only.
fn read_safetensors(
    path: &Path,
    prepare: impl FnOnce(&HashMap<String, TensorInfo>, &mut [f32]),
) -> Result<(HashMap<String, TensorInfo>, Weights), EmbedError> {
    let io = |source| EmbedError::Read {
        path: path.to_owned(),
        source,
    };
    let bad = |what: String| EmbedError::Model(format!("model.safetensors: {what}"));
    let mut file = std::fs::File::open(path).map_err(io)?;
    let file_len = file.metadata().map_err(io)?.len();
    let mut len_bytes = [0u8; 8];
    file.read_exact(&mut len_bytes).map_err(io)?;
    let header_len = u64::from_le_bytes(len_bytes);
    if header_len > MAX_HEADER_BYTES || header_len > file_len.saturating_sub(8) {
        return Err(bad(format!(
            "header of {header_len} bytes in a file of {file_len}"
        )));
    }
    let mut header = vec![0u8; header_len as usize];
    file.read_exact(&mut header).map_err(io)?;
    let header: serde_json::Map<String, serde_json::Value> =
        serde_json::from_slice(&header).map_err(|e| bad(format!("header: {e}")))?;
    let data_len = usize::try_from(file_len - 8 - header_len)
        .map_err(|_| bad("the data section does not fit in memory".into()))?;
    let mut tensors = HashMap::with_capacity(header.len());
    for (name, entry) in header {
        if name == "__metadata__" {
            continue;
        }
        let dtype = entry["dtype"].as_str().unwrap_or_default().to_owned();
        let shape: Option<Vec<usize>> = entry["shape"].as_array().and_then(|dims| {
            dims.iter()
                .map(|d| d.as_u64().and_then(|d| usize::try_from(d).ok()))
                .collect()
        });
        let offsets: Option<Vec<usize>> = entry["data_offsets"].as_array().and_then(|o| {
            o.iter()
                .map(|d| d.as_u64().and_then(|d| usize::try_from(d).ok()))
                .collect()
        });
        let (Some(shape), Some([begin, end])) = (shape, offsets.as_deref()) else {
            return Err(bad(format!("tensor {name} has no shape or data_offsets")));
        };
        if begin > end || *end > data_len {
            return Err(bad(format!(
                "tensor {name} lies at bytes {begin}..{end} of a {data_len}-byte data section"
            )));
        }
        // The checkpoint may or may not carry the `bert.` prefix.
        let name = name
            .strip_prefix("bert.")
            .map(str::to_owned)
            .unwrap_or(name);
        tensors.insert(
            name,
            TensorInfo {
                dtype,
                shape,
                bytes: *begin..*end,
            },
        );
    }
    // Rounded up to whole f32 values; the tail beyond the data stays zero.
    let mut values = vec![0.0f32; data_len.div_ceil(4)];
    let bytes: &mut [u8] = bytemuck::cast_slice_mut(&mut values);
    file.read_exact(&mut bytes[..data_len]).map_err(io)?;
    #[cfg(target_endian = "big")]
    for value in values.iter_mut() {
        *value = f32::from_bits(u32::from_le(value.to_bits()));
    }
    prepare(&tensors, &mut values);
    Ok((tensors, Weights(values)))
}

/// Whether a tensor is a dense layer's weight, laid out column-major at load.
fn is_dense_weight(name: &str, info: &TensorInfo) -> bool {
    name.starts_with("encoder.layer.")
        && name.ends_with(".weight")
        && info.shape.len() == 2
        && info.dtype == "F32"
}

/// Turns every dense weight from row-major `[out, in]` into column-major in its
/// own place, through one scratch buffer (the largest weight is 2.4 MB, so the
/// turn happens in the cache).
fn lay_out_dense_weights(tensors: &HashMap<String, TensorInfo>, values: &mut [f32]) {
    /// Rows turned together: each pass writes runs of this many values.
    const BLOCK: usize = 16;
    let mut scratch = Vec::new();
    for (name, info) in tensors {
        if !is_dense_weight(name, info) {
            continue;
        }
        let (outputs, inputs) = (info.shape[0], info.shape[1]);
        let start = info.bytes.start / 4;
        // Bad offsets or sizes are reported when the tensor is taken; skip them here.
        let Some(weight) = values.get_mut(start..start + outputs * inputs) else {
            continue;
        };
        if info.bytes.start % 4 != 0 || info.bytes.len() != weight.len() * 4 {
            continue;
        }
        scratch.clear();
        scratch.resize(weight.len(), 0.0);
        for block in (0..outputs).step_by(BLOCK) {
            let rows = BLOCK.min(outputs - block);
            for input in 0..inputs {
                let column = &mut scratch[input * outputs + block..][..rows];
                for (offset, value) in column.iter_mut().enumerate() {
                    *value = weight[(block + offset) * inputs + input];
                }
            }
        }
        weight.copy_from_slice(&scratch);
    }
}

impl Bert {
    pub(crate) fn load(config: Config, path: &Path) -> Result<Bert, EmbedError> {
        let (mut tensors, weights) = read_safetensors(path, lay_out_dense_weights)?;
        let h = config.hidden;
        let mut take = |name: &str,
                        shape: &[Option<usize>]|
         -> Result<(Range<usize>, Vec<usize>), EmbedError> {
            let info = tensors.remove(name).ok_or_else(|| {
                EmbedError::Model(format!("model.safetensors has no tensor {name}"))
            })?;
            if info.dtype != "F32" {
                return Err(EmbedError::Model(format!(
                    "tensor {name} is {}, not F32",
                    info.dtype
                )));
            }
            let fits = info.shape.len() == shape.len()
                && info
                    .shape
                    .iter()
                    .zip(shape)
                    .all(|(found, want)| want.is_none_or(|want| *found == want));
            if !fits {
                return Err(EmbedError::Model(format!(
                    "tensor {name} has shape {:?}, expected {shape:?}",
                    info.shape
                )));
            }
            let count: usize = info.shape.iter().product();
            if info.bytes.start % 4 != 0 || info.bytes.len() != count * 4 {
                return Err(EmbedError::Model(format!(
                    "tensor {name} has {} bytes at offset {}, not {count} aligned f32 values",
                    info.bytes.len(),
                    info.bytes.start
                )));
            }
            let start = info.bytes.start / 4;
            Ok((start..start + count, info.shape))
        };
        let (word_embeddings, word_shape) =
            take("embeddings.word_embeddings.weight", &[None, Some(h)])?;
        let (position_embeddings, _) = take(
            "embeddings.position_embeddings.weight",
            &[Some(config.max_positions), Some(h)],
        )?;
        let (token_types, _) = take("embeddings.token_type_embeddings.weight", &[None, Some(h)])?;
        // Every token has type 0: only the first row is used.
        let token_type_embeddings = token_types.start..token_types.start + h;
        if token_types.len() < h {
            return Err(EmbedError::Model(
                "model.safetensors has no token type embeddings".into(),
            ));
        }
        let mut norm = |prefix: &str| -> Result<LayerNorm, EmbedError> {
            Ok(LayerNorm {
                weight: take(&format!("{prefix}.weight"), &[Some(h)])?.0,
                bias: take(&format!("{prefix}.bias"), &[Some(h)])?.0,
            })
        };
        let embeddings_norm = norm("embeddings.LayerNorm")?;
        let mut layers = Vec::with_capacity(config.layers);
        for i in 0..config.layers {
            let p = format!("encoder.layer.{i}");
            let mut linear = |name: &str, inputs: usize, outputs: usize| {
                Ok::<_, EmbedError>(Linear {
                    weight: take(
                        &format!("{p}.{name}.weight"),
                        &[Some(outputs), Some(inputs)],
                    )?
                    .0,
                    bias: take(&format!("{p}.{name}.bias"), &[Some(outputs)])?.0,
                    inputs,
                    outputs,
                })
            };
            let query = linear("attention.self.query", h, h)?;
            let key = linear("attention.self.key", h, h)?;
            let value = linear("attention.self.value", h, h)?;
            let attention_out = linear("attention.output.dense", h, h)?;
            let intermediate = linear("intermediate.dense", h, config.intermediate)?;
            let output = linear("output.dense", config.intermediate, h)?;
            let mut norm = |name: &str| -> Result<LayerNorm, EmbedError> {
                Ok(LayerNorm {
                    weight: take(&format!("{p}.{name}.weight"), &[Some(h)])?.0,
                    bias: take(&format!("{p}.{name}.bias"), &[Some(h)])?.0,
                })
            };
            layers.push(Layer {
                query,
                key,
                value,
                attention_out,
                attention_norm: norm("attention.output.LayerNorm")?,
                intermediate,
                output,
                output_norm: norm("output.LayerNorm")?,
            });
        }
        Ok(Bert {
            config,
            weights,
            word_embeddings,
            vocab_size: word_shape[0],
            position_embeddings,
            token_type_embeddings,
            embeddings_norm,
            layers,
        })
    }

    /// The vocabulary size the word embeddings cover.
    pub(crate) fn vocab_size(&self) -> usize {
        self.vocab_size
    }

    /// The L2-normalised mean of the last hidden states of each sequence of word
    /// pieces, computed as one packed batch on this thread. Every id must be below
    /// [`Bert::vocab_size`] and every sequence at most `max_positions` long and not
    /// empty (the tokenizer guarantees all three).
    pub(crate) fn embed_packed(&self, sequences: &[&[u32]]) -> Vec<Vec<f32>> {
        // The x86 matrix kernels leave the upper halves of the vector registers
        // dirty; legacy SSE code run after them (this crate's loops, built for
        // baseline x86-64) then stalls on every instruction: a 256-piece text took
        // 1.3 s instead of 0.2 s. Compiled for AVX2 (VEX encoding) under pulp's
        // run-time dispatch, the same loops run at full speed, and vectorised.
        pulp::Arch::new().dispatch(Forward {
            bert: self,
            sequences,
        })
    }

    /// [`Bert::embed_packed`], inlined into the dispatcher's target features.
    #[inline(always)]
    fn forward(&self, sequences: &[&[u32]]) -> Vec<Vec<f32>> {
        let h = self.config.hidden;
        let w = self.weights.values();
        let mut spans = Vec::with_capacity(sequences.len());
        let mut rows = 0;
        for sequence in sequences {
            spans.push(rows..rows + sequence.len());
            rows += sequence.len();
        }
        let longest = sequences.iter().map(|s| s.len()).max().unwrap_or(0);

        let mut x = vec![0.0f32; rows * h];
        let word = &w[self.word_embeddings.clone()];
        let position = &w[self.position_embeddings.clone()];
        let token_type = &w[self.token_type_embeddings.clone()];
        let mut x_rows = x.chunks_exact_mut(h);
        for sequence in sequences {
            for (pos, (&id, row)) in sequence.iter().zip(x_rows.by_ref()).enumerate() {
                let id = id as usize;
                let word = &word[id * h..(id + 1) * h];
                let pos = &position[pos * h..(pos + 1) * h];
                for (((v, w), p), t) in row.iter_mut().zip(word).zip(pos).zip(token_type) {
                    *v = w + p + t;
                }
            }
        }
        self.layer_norm(&self.embeddings_norm, &mut x);

        let mut q = vec![0.0f32; rows * h];
        let mut k = vec![0.0f32; rows * h];
        let mut v = vec![0.0f32; rows * h];
        let mut context = vec![0.0f32; rows * h];
        let mut attended = vec![0.0f32; rows * h];
        let mut intermediate = vec![0.0f32; rows * self.config.intermediate];
        let mut scores = vec![0.0f32; longest * longest];
        for layer in &self.layers {
            self.dense(&layer.query, &x, rows, None, &mut q);
            self.dense(&layer.key, &x, rows, None, &mut k);
            self.dense(&layer.value, &x, rows, None, &mut v);
            for span in &spans {
                self.attention(span.clone(), &q, &k, &v, &mut scores, &mut context);
            }
            self.dense(
                &layer.attention_out,
                &context,
                rows,
                Some(&x),
                &mut attended,
            );
            self.layer_norm(&layer.attention_norm, &mut attended);
            self.dense(
                &layer.intermediate,
                &attended,
                rows,
                None,
                &mut intermediate,
            );
            intermediate
                .iter_mut()
                .for_each(|value| *value = gelu(*value));
            self.dense(&layer.output, &intermediate, rows, Some(&attended), &mut x);
            self.layer_norm(&layer.output_norm, &mut x);
        }

        spans
            .iter()
            .map(|span| {
                let mut pooled = vec![0.0f32; h];
                for row in x[span.start * h..span.end * h].chunks_exact(h) {
                    for (p, v) in pooled.iter_mut().zip(row) {
                        *p += v;
                    }
                }
                let count = span.len().max(1) as f32;
                pooled.iter_mut().for_each(|p| *p /= count);
                let norm = pooled.iter().map(|v| v * v).sum::<f32>().sqrt().max(1e-12);
                pooled.iter_mut().for_each(|v| *v /= norm);
                pooled
            })
            .collect()
    }

    /// `out = input Wᵀ + b (+ residual)` for `rows` rows: in faer's column-major
    /// terms `outᵀ = W inputᵀ`, each row of ours being one of its columns.
    #[inline(always)]
    fn dense(
        &self,
        linear: &Linear,
        input: &[f32],
        rows: usize,
        residual: Option<&[f32]>,
        out: &mut [f32],
    ) {
        let w = self.weights.values();
        let bias = &w[linear.bias.clone()];
        match residual {
            Some(residual) => {
                for (out_row, res_row) in out
                    .chunks_exact_mut(linear.outputs)
                    .zip(residual.chunks_exact(linear.outputs))
                {
                    for ((o, r), b) in out_row.iter_mut().zip(res_row).zip(bias) {
                        *o = r + b;
                    }
                }
            }
            None => {
                for out_row in out.chunks_exact_mut(linear.outputs) {
                    out_row.copy_from_slice(bias);
                }
            }
        }
        matmul(
            MatMut::from_column_major_slice_mut(out, linear.outputs, rows),
            Accum::Add,
            MatRef::from_column_major_slice(
                &w[linear.weight.clone()],
                linear.outputs,
                linear.inputs,
            ),
            MatRef::from_column_major_slice(input, linear.inputs, rows),
            1.0,
            Par::Seq,
        );
    }

    /// Self-attention of one sequence (rows `span` of the packed batch), every head:
    /// `softmax(Q Kᵀ / √d) V` into the same rows of `context`. In column-major
    /// terms a head's `Qᵀ`, `Kᵀ`, `Vᵀ` are `[d, n]` views with column stride
    /// `hidden`; the scores are kept transposed (`K Qᵀ`), so that each query's
    /// softmax runs over a contiguous column and `contextᵀ = Vᵀ · scores`.
    #[inline(always)]
    fn attention(
        &self,
        span: Range<usize>,
        q: &[f32],
        k: &[f32],
        v: &[f32],
        scores: &mut [f32],
        context: &mut [f32],
    ) {
        let h = self.config.hidden;
        let n = span.len();
        let head_dim = h / self.config.heads;
        let scale = 1.0 / (head_dim as f32).sqrt();
        let rows = span.start * h..span.end * h;
        let q = MatRef::from_column_major_slice(&q[rows.clone()], h, n);
        let k = MatRef::from_column_major_slice(&k[rows.clone()], h, n);
        let v = MatRef::from_column_major_slice(&v[rows.clone()], h, n);
        let context = &mut context[rows];
        let scores = &mut scores[..n * n];
        for offset in (0..h).step_by(head_dim) {
            matmul(
                MatMut::from_column_major_slice_mut(scores, n, n),
                Accum::Replace,
                k.submatrix(offset, 0, head_dim, n).transpose(),
                q.submatrix(offset, 0, head_dim, n),
                scale,
                Par::Seq,
            );
            for column in scores.chunks_exact_mut(n) {
                let max = column.iter().copied().fold(f32::NEG_INFINITY, f32::max);
                let mut sum = 0.0;
                for score in column.iter_mut() {
                    *score = (*score - max).exp();
                    sum += *score;
                }
                column.iter_mut().for_each(|score| *score /= sum);
            }
            matmul(
                MatMut::from_column_major_slice_mut(context, h, n)
                    .submatrix_mut(offset, 0, head_dim, n),
                Accum::Replace,
                v.submatrix(offset, 0, head_dim, n),
                MatRef::from_column_major_slice(scores, n, n),
                1.0,
                Par::Seq,
            );
        }
    }

    #[inline(always)]
    fn layer_norm(&self, norm: &LayerNorm, x: &mut [f32]) {
        let w = self.weights.values();
        let weight = &w[norm.weight.clone()];
        let bias = &w[norm.bias.clone()];
        let n = weight.len();
        let eps = self.config.layer_norm_eps;
        for row in x.chunks_exact_mut(n) {
            let mean = row.iter().sum::<f32>() / n as f32;
            let variance = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / n as f32;
            let scale = 1.0 / (variance + eps).sqrt();
            for ((v, w), b) in row.iter_mut().zip(weight).zip(bias) {
                *v = (*v - mean) * scale * w + b;
            }
        }
    }
}

/// [`Bert::forward`] as pulp dispatches it: `with_simd` is inlined into a
/// function compiled for the detected instruction set, and everything it calls
/// but the matrix products is inlined there too.
struct Forward<'a> {
    bert: &'a Bert,
    sequences: &'a [&'a [u32]],
}

impl pulp::WithSimd for Forward<'_> {
    type Output = Vec<Vec<f32>>;

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _simd: S) -> Self::Output {
        self.bert.forward(self.sequences)
    }
}

/// GELU with erf (`x Φ(x)`), BERT's `gelu` activation.
#[inline(always)]
fn gelu(x: f32) -> f32 {
    0.5 * x * (1.0 + erf(x * std::f32::consts::FRAC_1_SQRT_2))
}

/// erf in f32 as a rational function on [-4, 4] (outside, erf is ±1 in f32): the
/// approximation XLA and Eigen use for f32, within a few ulp. Unlike a call into
/// libm it inlines and vectorises, and it never runs legacy SSE code after the
/// matrix kernels (each such call cost a ~100-cycle state transition).
#[inline(always)]
fn erf(x: f32) -> f32 {
    let x = x.clamp(-4.0, 4.0);
    let x2 = x * x;
    let mut p = x2 * -2.726_142_3e-10 + 2.770_681_4e-8;
    p = x2 * p + -2.101_024e-6;
    p = x2 * p + -5.692_506_4e-5;
    p = x2 * p + -7.349_906_3e-4;
    p = x2 * p + -2.954_600_2e-3;
    p = x2 * p + -1.609_603_3e-2;
    let mut q = x2 * -1.456_607_2e-5 + -2.133_740_6e-4;
    q = x2 * q + -1.682_827e-3;
    q = x2 * q + -7.373_329e-3;
    q = x2 * q + -1.426_473_9e-2;
    x * p / q
}

#[cfg(test)]
mod tests {
    use super::erf;

    #[test]
    fn erf_matches_libm_within_a_few_ulp() {
        let mut worst = 0.0f32;
        for i in -60_000..=60_000 {
            let x = i as f32 * 1e-4;
            let exact = libm::erf(f64::from(x));
            let error = (f64::from(erf(x)) - exact).abs() as f32;
            worst = worst.max(error);
        }
        assert!(worst < 5e-7, "worst absolute error {worst}");
    }
}
