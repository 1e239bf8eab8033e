"""What MLflow runs to load a logged policy (models from code: no pickled object)."""

from mlflow.models import set_model

from fgpo.policy.pyfunc import PolicyModel

set_model(PolicyModel())
