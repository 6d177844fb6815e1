# https://github.com/pytorch/pytorch/issues/120219
# "torch._dynamo.exc.Unsupported: call_function args: UserDefinedObjectVariable(EasyDict)": the
# maintainers' fix, the dict subclass registered as a pytree node, exported non-strict.
import torch
import torch.utils._pytree as pytree


class CustomDict(dict):
    def __init__(self, *args, **kwargs):
        super(CustomDict, self).__init__(*args, **kwargs)
        self.__dict__ = self


def _dict_flatten(d):
    return list(d.values()), list(d.keys())


def _dict_flatten_with_keys(d):
    values, context = _dict_flatten(d)
    return [(pytree.MappingKey(k), v) for k, v in zip(context, values)], context


def _dict_unflatten(values, context):
    return dict(zip(context, values))


pytree.register_pytree_node(
    CustomDict,
    flatten_fn=_dict_flatten,
    unflatten_fn=_dict_unflatten,
    serialized_type_name="CustomDict",
    flatten_with_keys_fn=_dict_flatten_with_keys,
)


class M(torch.nn.Module):
    def forward(self, d: CustomDict):
        return d["x"] + d["y"]


model = M()
example_args = (CustomDict({"x": torch.ones(3, 3), "y": torch.ones(3, 3)}),)
strict = False
