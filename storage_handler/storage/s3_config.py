"""Where an S3 bucket is and how to address it, resolved the standard way; credentials are never ours to hold.

Resolution, first match wins (Hadoop S3A's key names, so a table's settings mean the same to Spark's S3A):

* endpoint: ``fs.s3a.bucket.<bucket>.endpoint``, ``fs.s3a.endpoint`` (table parameters or ``hsh --conf``), then
  ``AWS_ENDPOINT_URL_S3``, then ``AWS_ENDPOINT_URL``; none means AWS itself. An endpoint without a scheme is https
  unless ``fs.s3a.connection.ssl.enabled=false``.
* region: ``fs.s3a.bucket.<bucket>.endpoint.region``, ``fs.s3a.endpoint.region``, then the region an AWS endpoint
  names (``s3.eu-west-1.amazonaws.com``, ``s3-eu-west-1.amazonaws.com``, ``s3.dualstack.…``, ``s3-fips.…``, VPC
  endpoints, ``….amazonaws.com.cn``: what S3A parses when no region is set -- a request signed for another region
  than its endpoint's is refused by AWS), then the AWS chain (``AWS_REGION``, ``AWS_DEFAULT_REGION``, the
  profile), else ``us-east-1``.
* path-style addressing: ``fs.s3a.[bucket.<bucket>.]path.style.access``; unset, it is on for a custom endpoint
  (MinIO-style stores, moto, Ceph) and off for AWS, including an AWS endpoint set explicitly.
* credentials: only the AWS chain (environment, ``AWS_PROFILE`` / shared files, web identity, instance role), read
  by boto3 and by pyarrow's AWS SDK themselves. Credential keys (``fs.s3a.access.key``, ``fs.s3a.secret.key``,
  ``fs.s3a.session.token``) are refused wherever they appear, so a secret can never be stored in the metastore,
  printed, logged or written to ``--json``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlparse

from storage_handler.errors import ConfigurationError

PREFIX = "fs.s3a."
SECRET_SUFFIXES = ("access.key", "secret.key", "session.token")
DEFAULT_REGION = "us-east-1"
#: hosts of AWS's own S3 endpoints (the China partition has its own suffix)
_AWS_SUFFIXES = (".amazonaws.com", ".amazonaws.com.cn")
#: an AWS region's name: eu-west-1, us-gov-west-1, cn-north-1, us-isob-east-1
_REGION = re.compile(r"[a-z]{2}(?:-gov|-iso[a-z]?)?-[a-z]+-\d+")


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

    @property
    def is_aws(self) -> bool:
        """AWS itself: no endpoint, or one of AWS's own S3 endpoints set explicitly."""
        return self.endpoint is None or is_aws_host(urlparse(self.endpoint).hostname or "")

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
    host = urlparse(endpoint).hostname if endpoint else None
    region = setting("endpoint.region") or aws_endpoint_region(host) or env.get("AWS_REGION") or \
        env.get("AWS_DEFAULT_REGION") or _profile_region() or DEFAULT_REGION
    path_style = _bool(setting("path.style.access"), "fs.s3a.path.style.access",
                       default=host is not None and not is_aws_host(host))
    return S3Config(endpoint, region, path_style)


def is_aws_host(host: str) -> bool:
    """Whether ``host`` is one of AWS's own S3 endpoints (not a MinIO-style store)."""
    return host.lower().endswith(_AWS_SUFFIXES)


def aws_endpoint_region(host: str | None) -> str | None:
    """The region an AWS S3 endpoint's host names, or None (not AWS, or the global ``s3.amazonaws.com``).

    The labels after the one that starts the service name (``s3``, ``s3-<region>``, ``s3-fips``,
    ``s3-accesspoint``) are searched, never those before it: a VPC endpoint or a bucket-style host starts with
    names of its own (``bucket.vpce-1a2b.s3.us-east-1.vpce.amazonaws.com``).
    """
    if host is None or not is_aws_host(host):
        return None
    labels = host.lower().split(".")
    for i, label in enumerate(labels):
        if label == "s3" or label.startswith("s3-"):
            for candidate in (label[3:], *labels[i + 1:]):
                if _REGION.fullmatch(candidate):
                    return candidate
            return None
    return None


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
