//! The MiniLM forward pass (BERT: 6 layers, 384 hidden, 12 heads), mean pooling
//! and L2 normalisation, in f32, with `matrixmultiply`'s SIMD sgemm for the dense
//! layers (chosen at run time, so the binary runs on any x86-64).

use std::collections::HashMap;

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
        Ok(Config {
            hidden: field("hidden_size")?,
            layers: field("num_hidden_layers")?,
            heads: field("num_attention_heads")?,
            intermediate: field("intermediate_size")?,
            max_positions: field("max_position_embeddings")?,
            layer_norm_eps: json["layer_norm_eps"].as_f64().unwrap_or(1e-12) as f32,
        })
    }
}

/// A dense layer: `y = x Wᵀ + b`, W stored `[out, in]` as in the checkpoint.
struct Linear {
    weight: Vec<f32>,
    bias: Vec<f32>,
    inputs: usize,
    outputs: usize,
}

impl Linear {
    /// `x` is `[rows, inputs]`; returns `[rows, outputs]`.
    fn forward(&self, x: &[f32], rows: usize) -> Vec<f32> {
        let mut y = vec![0.0f32; rows * self.outputs];
        for row in y.chunks_exact_mut(self.outputs) {
            row.copy_from_slice(&self.bias);
        }
        // SAFETY: the pointers and strides describe `x` ([rows, inputs], row-major),
        // W read transposed ([inputs, outputs] with strides (1, inputs)) and `y`
        // ([rows, outputs], row-major); all three buffers have exactly those sizes.
        unsafe {
            matrixmultiply::sgemm(
                rows,
                self.inputs,
                self.outputs,
                1.0,
                x.as_ptr(),
                self.inputs as isize,
                1,
                self.weight.as_ptr(),
                1,
                self.inputs as isize,
                1.0,
                y.as_mut_ptr(),
                self.outputs as isize,
                1,
            );
        }
        y
    }
}

struct LayerNorm {
    weight: Vec<f32>,
    bias: Vec<f32>,
    eps: f32,
}

impl LayerNorm {
    fn apply(&self, x: &mut [f32]) {
        let n = self.weight.len();
        for row in x.chunks_exact_mut(n) {
            let mean = row.iter().sum::<f32>() / n as f32;
            let variance = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / n as f32;
            let scale = 1.0 / (variance + self.eps).sqrt();
            for ((v, w), b) in row.iter_mut().zip(&self.weight).zip(&self.bias) {
                *v = (*v - mean) * scale * w + b;
            }
        }
    }
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

/// The loaded encoder weights.
pub(crate) struct Bert {
    config: Config,
    word_embeddings: Vec<f32>,
    position_embeddings: Vec<f32>,
    token_type_embeddings: Vec<f32>,
    embeddings_norm: LayerNorm,
    layers: Vec<Layer>,
}

/// A tensor's shape and values.
type Tensor = (Vec<usize>, Vec<f32>);

/// Takes a tensor of the given name and shape out of the checkpoint.
type Take<'a> = dyn FnMut(&str, &[usize]) -> Result<Vec<f32>, EmbedError> + 'a;

/// Reads every tensor of a safetensors file as f32.
fn tensors(bytes: &[u8]) -> Result<HashMap<String, Tensor>, EmbedError> {
    let file = safetensors::SafeTensors::deserialize(bytes)
        .map_err(|e| EmbedError::Model(format!("model.safetensors: {e}")))?;
    let mut out = HashMap::new();
    for (name, view) in file.tensors() {
        // Buffers such as `position_ids` (I64) are not weights; skip them.
        if name.ends_with("position_ids") {
            continue;
        }
        if view.dtype() != safetensors::Dtype::F32 {
            return Err(EmbedError::Model(format!(
                "tensor {name} is {:?}, not f32",
                view.dtype()
            )));
        }
        let values: Vec<f32> = view
            .data()
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        // The checkpoint may or may not carry the `bert.` prefix.
        let name = name.strip_prefix("bert.").unwrap_or(&name).to_owned();
        out.insert(name, (view.shape().to_vec(), values));
    }
    Ok(out)
}

impl Bert {
    pub(crate) fn load(config: Config, weights: &[u8]) -> Result<Bert, EmbedError> {
        let mut tensors = tensors(weights)?;
        let h = config.hidden;
        let vocab = {
            let (shape, _) = tensors
                .get("embeddings.word_embeddings.weight")
                .ok_or_else(|| {
                    EmbedError::Model("model.safetensors has no word embeddings".into())
                })?;
            shape[0]
        };
        let token_type_embeddings = {
            let (shape, values) = tensors
                .remove("embeddings.token_type_embeddings.weight")
                .ok_or_else(|| {
                    EmbedError::Model("model.safetensors has no token type embeddings".into())
                })?;
            if shape.len() != 2 || shape[1] != h {
                return Err(EmbedError::Model(format!(
                    "token type embeddings have shape {shape:?}"
                )));
            }
            values[..h].to_vec()
        };
        let mut take = |name: &str, shape: &[usize]| -> Result<Vec<f32>, EmbedError> {
            let (found, values) = tensors.remove(name).ok_or_else(|| {
                EmbedError::Model(format!("model.safetensors has no tensor {name}"))
            })?;
            if found != shape {
                return Err(EmbedError::Model(format!(
                    "tensor {name} has shape {found:?}, expected {shape:?}"
                )));
            }
            Ok(values)
        };
        let norm = |take: &mut Take<'_>, prefix: &str| -> Result<LayerNorm, EmbedError> {
            Ok(LayerNorm {
                weight: take(&format!("{prefix}.weight"), &[h])?,
                bias: take(&format!("{prefix}.bias"), &[h])?,
                eps: config.layer_norm_eps,
            })
        };
        let linear = |take: &mut Take<'_>,
                      prefix: &str,
                      inputs: usize,
                      outputs: usize|
         -> Result<Linear, EmbedError> {
            Ok(Linear {
                weight: take(&format!("{prefix}.weight"), &[outputs, inputs])?,
                bias: take(&format!("{prefix}.bias"), &[outputs])?,
                inputs,
                outputs,
            })
        };
        let word_embeddings = take("embeddings.word_embeddings.weight", &[vocab, h])?;
        let position_embeddings = take(
            "embeddings.position_embeddings.weight",
            &[config.max_positions, h],
        )?;
        let embeddings_norm = norm(&mut take, "embeddings.LayerNorm")?;
        let mut layers = Vec::with_capacity(config.layers);
        for i in 0..config.layers {
            let p = format!("encoder.layer.{i}");
            layers.push(Layer {
                query: linear(&mut take, &format!("{p}.attention.self.query"), h, h)?,
                key: linear(&mut take, &format!("{p}.attention.self.key"), h, h)?,
                value: linear(&mut take, &format!("{p}.attention.self.value"), h, h)?,
                attention_out: linear(&mut take, &format!("{p}.attention.output.dense"), h, h)?,
                attention_norm: norm(&mut take, &format!("{p}.attention.output.LayerNorm"))?,
                intermediate: linear(
                    &mut take,
                    &format!("{p}.intermediate.dense"),
                    h,
                    config.intermediate,
                )?,
                output: linear(
                    &mut take,
                    &format!("{p}.output.dense"),
                    config.intermediate,
                    h,
                )?,
                output_norm: norm(&mut take, &format!("{p}.output.LayerNorm"))?,
            });
        }
        Ok(Bert {
            config,
            word_embeddings,
            position_embeddings,
            token_type_embeddings,
            embeddings_norm,
            layers,
        })
    }

    /// The L2-normalised mean of the last hidden states of `ids` (one sequence, no
    /// padding).
    pub(crate) fn embed(&self, ids: &[u32]) -> Vec<f32> {
        let h = self.config.hidden;
        let n = ids.len();
        let mut x = vec![0.0f32; n * h];
        for (position, (&id, row)) in ids.iter().zip(x.chunks_exact_mut(h)).enumerate() {
            let word = &self.word_embeddings[id as usize * h..(id as usize + 1) * h];
            let pos = &self.position_embeddings[position * h..(position + 1) * h];
            for j in 0..h {
                row[j] = word[j] + pos[j] + self.token_type_embeddings[j];
            }
        }
        self.embeddings_norm.apply(&mut x);
        let heads = self.config.heads;
        let head_dim = h / heads;
        let scale = 1.0 / (head_dim as f32).sqrt();
        for layer in &self.layers {
            let q = layer.query.forward(&x, n);
            let k = layer.key.forward(&x, n);
            let v = layer.value.forward(&x, n);
            let mut context = vec![0.0f32; n * h];
            let mut scores = vec![0.0f32; n];
            for head in 0..heads {
                let offset = head * head_dim;
                for i in 0..n {
                    let qi = &q[i * h + offset..i * h + offset + head_dim];
                    let mut max = f32::NEG_INFINITY;
                    for (j, score) in scores.iter_mut().enumerate() {
                        let kj = &k[j * h + offset..j * h + offset + head_dim];
                        *score = qi.iter().zip(kj).map(|(a, b)| a * b).sum::<f32>() * scale;
                        max = max.max(*score);
                    }
                    let mut sum = 0.0;
                    for score in scores.iter_mut() {
                        *score = (*score - max).exp();
                        sum += *score;
                    }
                    let out = &mut context[i * h + offset..i * h + offset + head_dim];
                    for (j, score) in scores.iter().enumerate() {
                        let weight = score / sum;
                        let vj = &v[j * h + offset..j * h + offset + head_dim];
                        for (o, value) in out.iter_mut().zip(vj) {
                            *o += weight * value;
                        }
                    }
                }
            }
            let mut attended = layer.attention_out.forward(&context, n);
            for (a, residual) in attended.iter_mut().zip(&x) {
                *a += residual;
            }
            layer.attention_norm.apply(&mut attended);
            let mut intermediate = layer.intermediate.forward(&attended, n);
            for value in intermediate.iter_mut() {
                *value = gelu(*value);
            }
            let mut output = layer.output.forward(&intermediate, n);
            for (o, residual) in output.iter_mut().zip(&attended) {
                *o += residual;
            }
            layer.output_norm.apply(&mut output);
            x = output;
        }
        let mut pooled = vec![0.0f32; h];
        for row in x.chunks_exact(h) {
            for (p, v) in pooled.iter_mut().zip(row) {
                *p += v;
            }
        }
        for p in pooled.iter_mut() {
            *p /= n as f32;
        }
        let norm = pooled.iter().map(|v| v * v).sum::<f32>().sqrt().max(1e-12);
        pooled.iter_mut().for_each(|v| *v /= norm);
        pooled
    }
}

/// The exact GELU (`x Φ(x)`, with erf), as BERT's `gelu` activation.
fn gelu(x: f32) -> f32 {
    0.5 * x * (1.0 + libm::erff(x / std::f32::consts::SQRT_2))
}
