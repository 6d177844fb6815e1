//! Calls of modules: a module instance's `forward` and methods run on the caller's values, an
//! `nn.Sequential` runs its steps in order, and a module the analysis does not know returns an
//! opaque tensor.

use std::rc::Rc;

use super::{Interpreter, Value, construction};

impl Interpreter<'_, '_> {
    /// Calls `nn.Sequential(a, b, c)` on `args`: each step on the previous one's output.
    pub(super) fn run_sequential(&mut self, steps: &[Value], args: &[Value]) -> Value {
        let range = self.call_range();
        let mut value = match args {
            [single] => single.clone(),
            _ => return Value::opaque_tensor(),
        };
        for step in steps {
            value = match step {
                Value::Layer(layer) => self.layer_call(layer, &[value], range),
                module @ Value::Module(Some(_), _) => self.call_module(module, &[value], &[]),
                Value::Sequential(inner) => self.run_sequential(inner, &[value]),
                _ => return Value::opaque_tensor(),
            };
        }
        value
    }

    /// Calls a module: a class of this file runs its `forward` on the caller's values, so shapes
    /// and dynamic dimensions flow into submodules; any other module returns an opaque tensor.
    pub(super) fn call_module(
        &mut self,
        module: &Value,
        args: &[Value],
        kwargs: &[(String, Value)],
    ) -> Value {
        let class = match module {
            Value::Module(class, _) => *class,
            _ => None,
        };
        self.ran_unknown_module |= class.is_none() && !self.constructing;
        // A model the script runs itself (a warm-up, a check of its outputs) may have filled
        // its caches before it is exported.
        if let (true, true, Some(class)) = (self.constructing, self.building.is_empty(), class) {
            self.run_before_export.insert(class);
        }
        match class.and_then(|class| Some((class, self.model.find_method(class, "forward")?))) {
            Some((_, forward)) => {
                match self.inline(forward, Some(module.clone()), args, kwargs, None) {
                    Value::Unknown | Value::Bottom => Value::opaque_tensor(),
                    value => value,
                }
            }
            // A `torch.nn` layer's subclass that keeps the layer's `forward`.
            None => match class.map(|_| self.attribute(module, construction::LAYER_FIELD)) {
                Some(Value::Layer(layer)) => {
                    let range = self.call_range();
                    self.transformer_masks(&layer, args, kwargs, range);
                    self.layer_call(&layer, args, range)
                }
                // ... or `nn.Sequential`'s, which runs its steps.
                _ => match super::exact_items(module) {
                    Some(steps) if class.is_some() => self.run_sequential(&steps, args),
                    _ => Value::opaque_tensor(),
                },
            },
        }
    }

    pub(super) fn module_method(
        &mut self,
        module: &Value,
        name: &str,
        args: &[Value],
        kwargs: &[(String, Value)],
        any_tensor: bool,
    ) -> Value {
        let class = match module {
            Value::Module(class, _) => *class,
            _ => None,
        };
        self.ran_unknown_module |= class.is_none() && !self.constructing && name == "forward";
        if let Some(class) = class {
            if let Some(method) = self.model.find_method(class, name) {
                return self.inline(method, Some(module.clone()), args, kwargs, None);
            }
            let attribute = self
                .built_field(module, name)
                .or_else(|| self.constructed_attribute(class, name))
                .or_else(|| self.model.find_attribute(class, name).cloned());
            match &attribute {
                Some(submodule @ Value::Module(..)) => {
                    return self.call_module(submodule, args, kwargs);
                }
                Some(Value::Layer(layer)) => {
                    let layer = layer.clone();
                    self.transformer_masks(&layer, args, kwargs, self.call_range());
                    return self.layer_call(&layer, args, self.call_range());
                }
                Some(Value::Sequential(steps)) => {
                    let steps = steps.clone();
                    return self.run_sequential(&steps, args);
                }
                Some(Value::Tensor(_) | Value::Modules(..)) => return Value::Unknown,
                _ => {}
            }
        }
        match name {
            "children" | "modules" => Value::Modules(Rc::new(Value::Module(None, None)), None),
            "get_submodule" => Value::Module(None, None),
            "get_parameter" | "get_buffer" => Value::tensor(),
            // They return the module itself: `model = Net().eval()` is still the `Net`.
            "train" | "eval" | "to" | "float" | "half" | "double" | "cpu" | "cuda"
            | "requires_grad_"
                if !any_tensor =>
            {
                module.clone()
            }
            "parameters" | "named_parameters" | "buffers" | "named_buffers" | "state_dict"
            | "train" | "eval" | "to" | "apply" | "register_buffer" | "register_parameter"
            | "add_module" | "named_children" | "named_modules" | "zero_grad"
            | "requires_grad_" | "extra_repr" => Value::Unknown,
            // A callable attribute the model cannot see (a submodule chosen at run time, an
            // activation from a table): applied to tensors, it returns one.
            _ if any_tensor => Value::opaque_tensor(),
            _ => Value::Unknown,
        }
    }
}
