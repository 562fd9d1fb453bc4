"""S3 configuration the standard way: fs.s3a.* settings, AWS_ENDPOINT_URL[_S3], the AWS chain; never a secret."""

from __future__ import annotations

import pytest

from storage_handler.errors import ConfigurationError
from storage_handler.storage import check_no_secrets, s3a_settings
from storage_handler.storage.s3_config import resolve

ENV = {"AWS_REGION": "eu-west-1"}


def test_aws_itself_by_default():
    config = resolve("lake", {}, ENV)
    assert (config.endpoint, config.region, config.path_style) == (None, "eu-west-1", False)
    assert config.describe()["endpoint"] == "AWS"


def test_endpoint_precedence_and_path_style():
    env = {**ENV, "AWS_ENDPOINT_URL": "http://general:1", "AWS_ENDPOINT_URL_S3": "http://s3only:2"}
    assert resolve("lake", {}, env).endpoint == "http://s3only:2"
    assert resolve("lake", {}, {**ENV, "AWS_ENDPOINT_URL": "http://general:1"}).endpoint == "http://general:1"
    table = {"fs.s3a.endpoint": "minio:9000", "fs.s3a.connection.ssl.enabled": "false"}
    config = resolve("lake", table, env)
    assert (config.endpoint, config.path_style) == ("http://minio:9000", True)  # custom endpoint: path style
    per_bucket = {**table, "fs.s3a.bucket.lake.endpoint": "https://lake-store", "fs.s3a.path.style.access": "false"}
    assert resolve("lake", per_bucket, env).endpoint == "https://lake-store"
    assert resolve("other", per_bucket, env).endpoint == "http://minio:9000"
    assert resolve("lake", per_bucket, env).path_style is False
    assert resolve("lake", {"fs.s3a.endpoint.region": "ap-south-1"}, env).region == "ap-south-1"


@pytest.mark.parametrize("endpoint, region", [
    ("https://s3.eu-west-1.amazonaws.com", "eu-west-1"), ("s3-eu-west-1.amazonaws.com", "eu-west-1"),
    ("https://s3.dualstack.us-east-2.amazonaws.com", "us-east-2"),
    ("https://s3-fips.us-gov-west-1.amazonaws.com", "us-gov-west-1"),
    ("https://bucket.vpce-1a2b3c4d-5e6f.s3.ap-south-1.vpce.amazonaws.com", "ap-south-1"),
    ("https://my-eu-central-1-bucket.s3.ap-northeast-1.amazonaws.com:443", "ap-northeast-1"),
    ("https://myap-123456789012.s3-accesspoint.us-west-2.amazonaws.com", "us-west-2"),
    ("https://s3.cn-north-1.amazonaws.com.cn", "cn-north-1"),
    ("https://S3.EU-WEST-3.AMAZONAWS.COM", "eu-west-3"),
    # no region in the endpoint: the chain's (ENV), as before
    ("https://s3.amazonaws.com", "eu-west-1"), ("https://s3-external-1.amazonaws.com", "eu-west-1"),
    ("http://s3.us-west-2.minio.local:9000", "eu-west-1"), ("http://127.0.0.1:9000", "eu-west-1"),
])
def test_an_aws_endpoint_names_its_region_and_is_not_path_style(endpoint, region):
    """As S3A: with no region set, an AWS endpoint's own region signs the requests (AWS refuses a request signed
    for another region than its endpoint's), and it stays virtual-host addressed: it is AWS, not a custom store."""
    config = resolve("lake", {"fs.s3a.endpoint": endpoint}, ENV)
    assert config.region == region
    assert config.path_style is ("amazonaws" not in endpoint.lower())
    # a region set explicitly still wins, and the endpoint itself is kept as written
    assert resolve("lake", {"fs.s3a.endpoint": endpoint, "fs.s3a.endpoint.region": "sa-east-1"}, ENV).region == \
        "sa-east-1"
    env_endpoint = resolve("lake", {}, {**ENV, "AWS_ENDPOINT_URL_S3": endpoint})
    assert (env_endpoint.region, env_endpoint.path_style) == (config.region, config.path_style)


@pytest.mark.parametrize("conf, message", [
    ({"fs.s3a.endpoint": "ftp://x"}, "not an http"), ({"fs.s3a.path.style.access": "yes"}, "true or false"),
    ({"fs.s3a.endpoint": "http://user:pw@host:1"}, "user information"),
])
def test_bad_settings_are_one_clear_error(conf, message):
    with pytest.raises(ConfigurationError, match=message) as err:
        resolve("lake", conf, ENV)
    assert "pw" not in str(err.value)


def test_secrets_are_refused_where_written_and_dropped_where_read():
    conf = {"fs.s3a.access.key": "AKIA-SECRET", "fs.s3a.bucket.lake.secret.key": "s3cr3t", "fs.s3a.endpoint": "h:1",
            "other": "x"}
    with pytest.raises(ConfigurationError, match="AWS chain") as err:
        check_no_secrets(conf, "--table-property")
    assert "AKIA-SECRET" not in str(err.value) and "s3cr3t" not in str(err.value)
    assert s3a_settings(conf) == {"fs.s3a.endpoint": "h:1"}


def test_pyarrow_addresses_an_aws_endpoint_on_every_supported_version():
    """pyarrow's file system for an AWS endpoint set explicitly is made with the endpoint's region on every pyarrow
    (before 16 it cannot force virtual hosts and addresses it by path, which AWS serves); only a custom endpoint
    that must be addressed by virtual host is refused there."""
    import pyarrow as pa

    from storage_handler.storage.s3 import _arrow_s3

    fs = _arrow_s3(resolve("lake", {"fs.s3a.endpoint": "https://s3.eu-north-1.amazonaws.com"}, ENV))
    assert fs.region == "eu-north-1"
    custom = resolve("lake", {"fs.s3a.endpoint": "http://minio:9000", "fs.s3a.path.style.access": "false"}, ENV)
    if int(pa.__version__.split(".")[0]) >= 16:
        assert _arrow_s3(custom).region == "eu-west-1"
    else:
        with pytest.raises(ConfigurationError, match="virtual-hosted addressing"):
            _arrow_s3(custom)
