//! The tensors of a published `model.safetensors`, taken by name with their shapes checked, and
//! every tensor of the file accounted for: a checkpoint with a missing, extra or mis-shaped
//! tensor is refused naming the tensor (another architecture, another version of this one, or a
//! damaged file would otherwise load as a different model).

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use candle_core::{DType, Device, Tensor};

/// Shared by every published-checkpoint loader (Caduceus, GET): `what` names the architecture
/// in its errors.
pub struct Weights {
    path: PathBuf,
    tensors: BTreeMap<String, Tensor>,
    taken: RefCell<BTreeSet<String>>,
    what: &'static str,
}

impl Weights {
    /// Reads every tensor of `path` (f32; bf16/f16 files are widened) onto `device`.
    pub fn open(path: &Path, device: &Device) -> Result<Self> {
        let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
        let st = safetensors::SafeTensors::deserialize(&bytes).map_err(|e| {
            anyhow::anyhow!(
                "{}: not a complete safetensors file ({e}); a half-written download? fetch it again",
                path.display()
            )
        })?;
        let mut tensors = BTreeMap::new();
        for (name, view) in st.tensors() {
            let t = tensor_of(&view, device)
                .with_context(|| format!("{}: tensor {name}", path.display()))?;
            tensors.insert(name, t);
        }
        Ok(Self::from_tensors(path, tensors, "Caduceus"))
    }

    /// Tensors already read from `path`, under the names the model asks for.
    pub fn from_tensors(
        path: &Path,
        tensors: BTreeMap<String, Tensor>,
        what: &'static str,
    ) -> Self {
        Self {
            path: path.to_path_buf(),
            tensors,
            taken: RefCell::new(BTreeSet::new()),
            what,
        }
    }

    /// Every tensor under its name.
    pub fn tensors(&self) -> &BTreeMap<String, Tensor> {
        &self.tensors
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn contains(&self, name: &str) -> bool {
        self.tensors.contains_key(name)
    }

    /// The tensor `name`, which must have `shape`.
    pub fn get(&self, name: &str, shape: &[usize]) -> Result<Tensor> {
        let Some(t) = self.tensors.get(name) else {
            bail!(
                "{}: tensor {name} (shape {shape:?}) is missing: not a {} checkpoint of this configuration, or another architecture",
                self.path.display(),
                self.what
            );
        };
        if t.dims() != shape {
            bail!(
                "{}: tensor {name} has shape {:?}, the configuration implies {shape:?}",
                self.path.display(),
                t.dims()
            );
        }
        self.taken.borrow_mut().insert(name.to_string());
        Ok(t.clone())
    }

    /// The tensor `name` when the file has it (a buffer or a tied copy the model can do
    /// without), marked as accounted for.
    pub fn optional(&self, name: &str) -> Option<Tensor> {
        let t = self.tensors.get(name)?;
        self.taken.borrow_mut().insert(name.to_string());
        Some(t.clone())
    }

    /// Fails naming the first tensor of the file the model did not take.
    pub fn finish(&self) -> Result<()> {
        let taken = self.taken.borrow();
        let extra: Vec<&String> = self
            .tensors
            .keys()
            .filter(|k| !taken.contains(*k))
            .collect();
        if let Some(first) = extra.first() {
            bail!(
                "{}: tensor {first} is not part of the model the configuration describes (as a {} checkpoint; {} such tensor{}); another architecture or configuration?",
                self.path.display(),
                self.what,
                extra.len(),
                if extra.len() == 1 { "" } else { "s" }
            );
        }
        Ok(())
    }
}

fn tensor_of(view: &safetensors::tensor::TensorView<'_>, device: &Device) -> Result<Tensor> {
    use safetensors::Dtype as S;
    let shape = view.shape().to_vec();
    let data = view.data();
    let t = match view.dtype() {
        S::F32 => Tensor::from_raw_buffer(data, DType::F32, &shape, &Device::Cpu)?,
        S::BF16 => Tensor::from_raw_buffer(data, DType::BF16, &shape, &Device::Cpu)?,
        S::F16 => Tensor::from_raw_buffer(data, DType::F16, &shape, &Device::Cpu)?,
        S::F64 => Tensor::from_raw_buffer(data, DType::F64, &shape, &Device::Cpu)?,
        S::I64 => Tensor::from_raw_buffer(data, DType::I64, &shape, &Device::Cpu)?,
        other => bail!("dtype {other:?} is not one a model's weights are stored in"),
    };
    let t = if t.dtype() == DType::I64 {
        t
    } else {
        t.to_dtype(DType::F32)?
    };
    Ok(t.to_device(device)?)
}
