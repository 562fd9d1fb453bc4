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
