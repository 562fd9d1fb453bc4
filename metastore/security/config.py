"""Where a metastore connection learns that it must use Kerberos, and as whom: Hive's and Spark's own keys.

Why Hive's keys rather than options of our own: a user's cluster already says it in ``hive-site.xml``
(``hive.metastore.sasl.enabled``, ``hive.metastore.kerberos.principal``) and ``core-site.xml``
(``hadoop.security.authentication``, ``hadoop.rpc.protection``), and Spark jobs say it in their Spark conf
(``spark.hadoop.*`` for the same keys, ``spark.kerberos.keytab`` / ``spark.kerberos.principal`` for the
credentials). Reading those keeps every process of ours -- CLI, registration, the prune service inside Spark's
driver, the Python data source -- in step with what Spark's own Hive client does with the same configuration.

Precedence, strongest first: explicit arguments (CLI flags), a Spark conf, ``HSH_*`` environment variables (how a
parent process hands the settings to a child it starts, e.g. the prune service), the site files
(``$HADOOP_CONF_DIR/{core,hive}-site.xml``, then ``$HIVE_CONF_DIR/hive-site.xml``, later files winning).

``_HOST`` in the service principal is replaced as Hive's Java client does (``SecurityUtil.getServerPrincipal``
with the metastore URI's host): the host exactly as written in the URI, lower-cased, never resolved -- verified
against the JDK 17 client, which asks the KDC for ``hive/127.0.0.1@REALM`` for ``thrift://127.0.0.1:PORT``.
"""

from __future__ import annotations

import os
import re
import socket
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from metastore.security.errors import KerberosConfigurationError
from storage_handler.home import spark_conf_dir

# environment variables a parent process sets for the children it starts (names proposed for the project)
ENV_SASL = "HSH_METASTORE_SASL"
ENV_SERVICE_PRINCIPAL = "HSH_METASTORE_PRINCIPAL"
ENV_KEYTAB = "HSH_KERBEROS_KEYTAB"
ENV_CLIENT_PRINCIPAL = "HSH_KERBEROS_PRINCIPAL"

SASL_KEY = "hive.metastore.sasl.enabled"
PRINCIPAL_KEY = "hive.metastore.kerberos.principal"
RPC_PROTECTION_KEY = "hadoop.rpc.protection"
AUTHENTICATION_KEY = "hadoop.security.authentication"
SPARK_KEYTAB_KEYS = ("spark.kerberos.keytab", "spark.yarn.keytab")
SPARK_PRINCIPAL_KEYS = ("spark.kerberos.principal", "spark.yarn.principal")

# hadoop.rpc.protection value -> SASL quality of protection (RFC 4752 names, as pure-sasl spells them)
_QOP = {"authentication": "auth", "integrity": "auth-int", "privacy": "auth-conf"}
_TRUE = {"true", "1", "yes", "on"}
_FALSE = {"false", "0", "no", "off", ""}


@dataclass(frozen=True, slots=True)
class KerberosSettings:
    """How to authenticate to a metastore. ``sasl_enabled`` False (the default) means plain Thrift, as today.

    ``service_principal`` is the metastore's principal as configured (``hive/_HOST@REALM`` allowed);
    ``keytab`` + ``client_principal`` are this process's own credentials -- without them the default ticket cache
    (``kinit``, ``$KRB5CCNAME``) is used. ``qops`` are the protection levels the client accepts, strongest first
    (from ``hadoop.rpc.protection``; all three when unset, and the server's choice decides).
    """

    sasl_enabled: bool = False
    service_principal: str | None = None
    keytab: str | None = None
    client_principal: str | None = None
    qops: tuple[str, ...] = ("auth-conf", "auth-int", "auth")

    def validated(self) -> KerberosSettings:
        """Self, or a one-line KerberosConfigurationError saying which key is missing or malformed."""
        if not self.sasl_enabled:
            return self
        if not self.service_principal:
            raise KerberosConfigurationError(
                f"{SASL_KEY} is true but {PRINCIPAL_KEY} is not set: set it to the metastore's principal, "
                "e.g. hive/_HOST@EXAMPLE.COM (hive-site.xml, --metastore-principal or spark.hadoop." + PRINCIPAL_KEY
                + ")"
            )
        split_principal(self.service_principal)
        if bool(self.keytab) != bool(self.client_principal):
            given, missing = ("keytab", "principal") if self.keytab else ("principal", "keytab")
            raise KerberosConfigurationError(
                f"a Kerberos {given} was given without a {missing}: pass both --keytab and --principal "
                "(spark.kerberos.keytab and spark.kerberos.principal), or neither to use the ticket cache (kinit)"
            )
        return self

    def service_principal_for(self, host: str) -> str:
        """The metastore's principal for a connection to ``host`` (``_HOST`` expanded as Hive's client does)."""
        if not self.service_principal:
            raise KerberosConfigurationError(f"no metastore principal configured ({PRINCIPAL_KEY})")
        return expand_host(self.service_principal, host)

    def sasl_service_and_host(self, host: str) -> tuple[str, str]:
        """(service, host) for a host-based GSSAPI name ``service@host``: what the SASL mechanism asks for."""
        service, instance, _realm = split_principal(self.service_principal_for(host))
        return service, instance


def split_principal(principal: str) -> tuple[str, str, str]:
    """``service/host@REALM`` -> its three parts; a metastore principal must have all three (Hive requires it:
    its SASL server fails with "Kerberos principal should have 3 parts")."""
    match = re.fullmatch(r"([^/@\s]+)/([^/@\s]+)@([^/@\s]+)", principal.strip())
    if not match:
        raise KerberosConfigurationError(
            f"the metastore principal {principal!r} is not of the form service/host@REALM "
            "(e.g. hive/_HOST@EXAMPLE.COM or hive/metastore.example.com@EXAMPLE.COM)"
        )
    return match.group(1), match.group(2), match.group(3)


def expand_host(principal: str, host: str) -> str:
    """Hadoop's ``SecurityUtil.getServerPrincipal``: ``_HOST`` becomes ``host`` lower-cased (the local host's
    canonical name for an empty host or 0.0.0.0); any other principal is returned unchanged."""
    service, instance, realm = split_principal(principal)
    if instance != "_HOST":
        return principal.strip()
    name = host if host and host != "0.0.0.0" else socket.getfqdn()
    return f"{service}/{name.lower()}@{realm}"


def read_site_xml(path: Path) -> dict[str, str]:
    """The name -> value pairs of one Hadoop-style ``*-site.xml`` (``<property><name/><value/></property>``)."""
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as e:
        raise KerberosConfigurationError(f"cannot read the Hadoop configuration file {path}: {e}") from e
    values: dict[str, str] = {}
    for prop in root.iter("property"):
        name = prop.findtext("name")
        if name:
            values[name.strip()] = (prop.findtext("value") or "").strip()
    return values


def site_folders(environ: Mapping[str, str] | None = None) -> list[tuple[Path, tuple[str, ...]]]:
    """The folders that may hold site files, with the files read from each, weakest first: ``$HADOOP_CONF_DIR``
    (core-site.xml, hive-site.xml), Spark's conf folder (``$SPARK_CONF_DIR``, else ``$SPARK_HOME/conf``: where a
    cluster's Spark keeps its hive-site.xml), ``$HIVE_CONF_DIR`` (hive-site.xml)."""
    env = os.environ if environ is None else environ
    folders: list[tuple[Path, tuple[str, ...]]] = []
    if env.get("HADOOP_CONF_DIR"):
        folders.append((Path(env["HADOOP_CONF_DIR"]), ("core-site.xml", "hive-site.xml")))
    spark_conf = spark_conf_dir(env)
    if spark_conf is not None:
        folders.append((spark_conf, ("hive-site.xml",)))
    if env.get("HIVE_CONF_DIR"):
        folders.append((Path(env["HIVE_CONF_DIR"]), ("hive-site.xml",)))
    return folders


def site_files(environ: Mapping[str, str] | None = None) -> list[Path]:
    """The site files that exist, in the order they are applied (later ones win)."""
    candidates = [folder / name for folder, names in site_folders(environ) for name in names]
    seen: set[Path] = set()
    found = []
    for path in candidates:
        if path.is_file() and path.resolve() not in seen:
            seen.add(path.resolve())
            found.append(path)
    return found


def site_config(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """All keys of :func:`site_files` merged."""
    merged: dict[str, str] = {}
    for path in site_files(environ):
        merged.update(read_site_xml(path))
    return merged


def _bool(value: str, key: str) -> bool:
    text = value.strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise KerberosConfigurationError(f"{key}={value!r} is neither true nor false")


def _qops(protection: str) -> tuple[str, ...]:
    levels = [p.strip().lower() for p in protection.split(",") if p.strip()]
    unknown = [p for p in levels if p not in _QOP]
    if unknown:
        raise KerberosConfigurationError(
            f"{RPC_PROTECTION_KEY}={protection!r}: unknown level(s) {', '.join(unknown)} "
            "(expected authentication, integrity and/or privacy)"
        )
    order = ["privacy", "integrity", "authentication"]
    return tuple(_QOP[p] for p in order if p in levels)


def from_hadoop_conf(conf: Mapping[str, str], base: KerberosSettings | None = None) -> KerberosSettings:
    """Settings from Hadoop/Hive keys (a merged site config, or a Spark conf with ``spark.hadoop.`` stripped),
    on top of ``base``; keys that are absent leave ``base``'s values."""
    settings = base or KerberosSettings()
    if SASL_KEY in conf:
        settings = replace(settings, sasl_enabled=_bool(conf[SASL_KEY], SASL_KEY))
    if conf.get(PRINCIPAL_KEY):
        settings = replace(settings, service_principal=conf[PRINCIPAL_KEY].strip())
    if conf.get(RPC_PROTECTION_KEY):
        settings = replace(settings, qops=_qops(conf[RPC_PROTECTION_KEY]))
    return settings


def from_spark_conf(conf: Mapping[str, str], base: KerberosSettings | None = None) -> KerberosSettings:
    """Settings from a Spark conf: ``spark.hadoop.<hadoop key>`` and ``spark.kerberos.keytab/principal``."""
    hadoop = {k[len("spark.hadoop."):]: v for k, v in conf.items() if k.startswith("spark.hadoop.")}
    settings = from_hadoop_conf(hadoop, base)
    keytab = next((conf[k] for k in SPARK_KEYTAB_KEYS if conf.get(k)), None)
    principal = next((conf[k] for k in SPARK_PRINCIPAL_KEYS if conf.get(k)), None)
    if keytab or principal:
        settings = replace(settings, keytab=keytab, client_principal=principal)
    return settings


def from_environment(environ: Mapping[str, str] | None = None, base: KerberosSettings | None = None) -> KerberosSettings:
    """Settings from the ``HSH_*`` variables a parent process set (see :func:`to_environment`) or a user did.
    ``$HSH_METASTORE_PRINCIPAL`` alone switches SASL on, as ``--metastore-principal`` does (a parent always hands
    over ``$HSH_METASTORE_SASL`` too, which decides)."""
    env = os.environ if environ is None else environ
    settings = base or KerberosSettings()
    if env.get(ENV_SERVICE_PRINCIPAL):
        settings = replace(settings, service_principal=env[ENV_SERVICE_PRINCIPAL], sasl_enabled=True)
    if ENV_SASL in env:
        settings = replace(settings, sasl_enabled=_bool(env[ENV_SASL], ENV_SASL))
    if env.get(ENV_KEYTAB) or env.get(ENV_CLIENT_PRINCIPAL):
        settings = replace(settings, keytab=env.get(ENV_KEYTAB) or None,
                           client_principal=env.get(ENV_CLIENT_PRINCIPAL) or None)
    return settings


def to_environment(settings: KerberosSettings) -> dict[str, str]:
    """The ``HSH_*`` variables that make a child process resolve the same settings (paths and names only:
    never a secret)."""
    env = {ENV_SASL: "true" if settings.sasl_enabled else "false"}
    if settings.service_principal:
        env[ENV_SERVICE_PRINCIPAL] = settings.service_principal
    if settings.keytab and settings.client_principal:
        env[ENV_KEYTAB] = settings.keytab
        env[ENV_CLIENT_PRINCIPAL] = settings.client_principal
    return env


def resolve(
    *,
    sasl: bool | None = None,
    service_principal: str | None = None,
    keytab: str | None = None,
    client_principal: str | None = None,
    spark_conf: Mapping[str, str] | None = None,
    environ: Mapping[str, str] | None = None,
) -> KerberosSettings:
    """The effective settings: arguments > ``spark_conf`` > ``HSH_*`` environment > site files; validated.

    A service principal given explicitly switches SASL on unless ``sasl`` says otherwise (a principal only makes
    sense for a secured metastore); a keytab alone does not (it may be meant for other services).
    """
    settings = from_hadoop_conf(site_config(environ))
    settings = from_environment(environ, settings)
    if spark_conf is not None:
        settings = from_spark_conf(spark_conf, settings)
    if service_principal:
        settings = replace(settings, service_principal=service_principal, sasl_enabled=True)
    if keytab or client_principal:
        settings = replace(settings, keytab=keytab, client_principal=client_principal)
    if sasl is not None:
        settings = replace(settings, sasl_enabled=sasl)
    return settings.validated()


# ---------------------------------------------------------------------------------------------------- this process
_ENV_KEYS = (ENV_SASL, ENV_SERVICE_PRINCIPAL, ENV_KEYTAB, ENV_CLIENT_PRINCIPAL, "HADOOP_CONF_DIR", "HIVE_CONF_DIR",
             "SPARK_CONF_DIR", "SPARK_HOME")
_current: dict[tuple[object, ...], KerberosSettings] = {}


def current() -> KerberosSettings:
    """This process's settings: :func:`resolve` over ``os.environ`` and the site files, computed again only when
    one of the variables or site files it reads changes (a metastore connection asks for every new client).

    How every process of the project agrees: the CLI turns its flags into ``HSH_*`` variables
    (:func:`configure_process`), a Spark session built by the project exports them before its JVM starts, and the
    children (the prune service, Spark's Python workers, a footer job) inherit them.
    """
    key: tuple[object, ...] = tuple(os.environ.get(k) for k in _ENV_KEYS)
    files = site_files()
    key += tuple((str(f), _mtime(f)) for f in files)
    found = _current.get(key)
    if found is None:
        found = resolve()
        if len(_current) > 16:
            _current.clear()
        _current[key] = found
    return found


def _mtime(path: Path) -> int:
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return 0


def configure_process(settings: KerberosSettings) -> KerberosSettings:
    """Make ``settings`` this process's (and its future children's) settings: the ``HSH_*`` variables of
    :func:`to_environment` in ``os.environ``. Nothing changes for unsecured settings that nobody asked for: the
    default stays the absence of variables. Returns :func:`current` afterwards."""
    settings = settings.validated()
    if settings.sasl_enabled or ENV_SASL in os.environ:
        os.environ.update(to_environment(settings))
        if not (settings.keytab and settings.client_principal):
            os.environ.pop(ENV_KEYTAB, None)
            os.environ.pop(ENV_CLIENT_PRINCIPAL, None)
    return current()


def krb5_conf_path(environ: Mapping[str, str] | None = None) -> str | None:
    """The krb5.conf MIT Kerberos uses here when it is not the system default: the first existing file of
    ``$KRB5_CONFIG``. Java ignores that variable, so a JVM we start gets it as ``-Djava.security.krb5.conf``."""
    env = os.environ if environ is None else environ
    for part in (env.get("KRB5_CONFIG") or "").split(":"):
        if part and Path(part).is_file():
            return str(Path(part).resolve())
    return None
