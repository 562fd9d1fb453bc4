"""Where an S3 bucket is and how to address it, resolved the standard way; credentials are never ours to hold.

Resolution, first match wins (Hadoop S3A's key names, so a table's settings mean the same to Spark's S3A):

* endpoint: ``fs.s3a.bucket.<bucket>.endpoint``, ``fs.s3a.endpoint`` (table parameters or ``hsh --conf``), then
  ``AWS_ENDPOINT_URL_S3``, then ``AWS_ENDPOINT_URL``; none means AWS itself. An endpoint without a scheme is https
  unless ``fs.s3a.connection.ssl.enabled=false``.
* region: ``fs.s3a.bucket.<bucket>.endpoint.region``, ``fs.s3a.endpoint.region``, then the AWS chain
  (``AWS_REGION``, ``AWS_DEFAULT_REGION``, the profile), else ``us-east-1``.
* path-style addressing: ``fs.s3a.[bucket.<bucket>.]path.style.access``; unset, it is on for a custom endpoint
  (MinIO-style stores, moto, Ceph) and off for AWS.
* credentials: only the AWS chain (environment, ``AWS_PROFILE`` / shared files, web identity, instance role), read
  by boto3 and by pyarrow's AWS SDK themselves. Credential keys (``fs.s3a.access.key``, ``fs.s3a.secret.key``,
  ``fs.s3a.session.token``) are refused wherever they appear, so a secret can never be stored in the metastore,
  printed, logged or written to ``--json``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlparse

from storage_handler.errors import ConfigurationError

PREFIX = "fs.s3a."
SECRET_SUFFIXES = ("access.key", "secret.key", "session.token")
DEFAULT_REGION = "us-east-1"


@dataclass(frozen=True, slots=True)
class S3Config:
    """How to reach one bucket. Hashable: one client per distinct configuration, shared by all threads."""

    endpoint: str | None  # scheme://host[:port], None: AWS
    region: str
    path_style: bool

    @property
    def endpoint_scheme(self) -> str:
        return urlparse(self.endpoint).scheme if self.endpoint else "https"

    @property
    def endpoint_host(self) -> str | None:
        return urlparse(self.endpoint).netloc if self.endpoint else None

    def describe(self) -> dict[str, str]:
        """For ``describe`` and error messages: the endpoint (without any user info), region, addressing."""
        return {"storage": "s3", "endpoint": _without_userinfo(self.endpoint) if self.endpoint else "AWS",
                "region": self.region, "addressing": "path" if self.path_style else "virtual-host"}


def check_no_secrets(conf: Mapping[str, str], where: str) -> None:
    """Refuse S3A credential keys: secrets come from the AWS chain only (see the module docstring)."""
    for key in conf:
        low = str(key).lower()
        if low.startswith(PREFIX) and low.endswith(SECRET_SUFFIXES):
            raise ConfigurationError(
                f"{where} sets {key}: credentials are never read from table parameters or options (they would be "
                "stored in the metastore); use the AWS chain: AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, "
                "AWS_PROFILE, or an instance role"
            )


def s3a_settings(conf: Mapping[str, str] | None) -> dict[str, str]:
    """The ``fs.s3a.*`` entries of a table's parameters or a job configuration. Credential keys another tool may
    have put there are left out (never used, never passed on): credentials come from the AWS chain only."""
    if not conf:
        return {}
    return {str(k): str(v) for k, v in conf.items()
            if str(k).lower().startswith(PREFIX) and not str(k).lower().endswith(SECRET_SUFFIXES)}


def resolve(bucket: str, conf: Mapping[str, str] | None = None,
            environ: Mapping[str, str] | None = None) -> S3Config:
    """The configuration for ``bucket`` from ``fs.s3a.*`` settings and the environment (module docstring)."""
    settings = {k.lower(): v for k, v in s3a_settings(conf).items()}
    env = os.environ if environ is None else environ

    def setting(name: str) -> str | None:
        for key in (f"{PREFIX}bucket.{bucket.lower()}.{name}", f"{PREFIX}{name}"):
            value = settings.get(key)
            if value is not None and value.strip():
                return value.strip()
        return None

    ssl = _bool(setting("connection.ssl.enabled"), "fs.s3a.connection.ssl.enabled", default=True)
    endpoint = setting("endpoint") or env.get("AWS_ENDPOINT_URL_S3") or env.get("AWS_ENDPOINT_URL") or None
    if endpoint is not None:
        endpoint = endpoint.strip().rstrip("/")
        if "://" not in endpoint:
            endpoint = f"{'https' if ssl else 'http'}://{endpoint}"
        parsed = urlparse(endpoint)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise ConfigurationError(
                f"S3 endpoint {_without_userinfo(endpoint)!r} for bucket {bucket!r} is not an http(s) URL; "
                "set fs.s3a.endpoint or AWS_ENDPOINT_URL to e.g. http://127.0.0.1:9000"
            )
        if parsed.username or parsed.password:
            raise ConfigurationError(
                f"S3 endpoint for bucket {bucket!r} carries user information; put credentials in the AWS chain "
                "(AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY or a profile), not in the endpoint"
            )
    region = setting("endpoint.region") or env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or \
        _profile_region() or DEFAULT_REGION
    path_style = _bool(setting("path.style.access"), "fs.s3a.path.style.access", default=endpoint is not None)
    return S3Config(endpoint, region, path_style)


def _bool(value: str | None, key: str, *, default: bool) -> bool:
    if value is None:
        return default
    low = value.strip().lower()
    if low not in ("true", "false"):
        raise ConfigurationError(f"{key}={value!r}: use true or false")
    return low == "true"


def _profile_region() -> str | None:
    try:
        import botocore.session

        return botocore.session.get_session().get_config_variable("region")
    except Exception:  # noqa: BLE001 - a broken shared config file only loses the default region
        return None


def _without_userinfo(url: str) -> str:
    parsed = urlparse(url)
    if parsed.username or parsed.password:
        return parsed._replace(netloc=(parsed.hostname or "") + (f":{parsed.port}" if parsed.port else "")).geturl()
    return url
