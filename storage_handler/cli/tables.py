"""``hsh register|sync|drop|describe``: tables in the metastore."""

from __future__ import annotations

import argparse
from dataclasses import replace
from typing import Any

from storage_handler.cli.common import (
    add_footer_options,
    add_json_option,
    add_metastore_option,
    add_statistics_options,
    footer_engine,
    metastore_uri,
    statistics_choice,
)
from storage_handler.cli.output import (
    footer_progress,
    narrate,
    print_json,
    print_mapping,
    progress_bar,
    published_line,
    say,
    statistics_line,
    warn,
    warn_statistics,
    warn_unreadable,
)
from storage_handler.errors import ConfigurationError
from storage_handler.registration import background

STRICT_HELP = ("refuse files that are not readable Parquet (truncated, not Parquet, empty) instead of recording them "
               "as unreadable and keeping them in every scan; a refusal changes nothing")


def add_commands(sub: Any) -> None:
    p = sub.add_parser("register", help="register a Parquet dataset as an external Hive table")
    p.add_argument("table", metavar="DB.TABLE")
    p.add_argument("path", metavar="PATH", help="folder holding the Parquet files (k=v/ partition folders allowed)")
    p.add_argument("--dry-run", action="store_true", help="print what would be created; change nothing")
    p.add_argument("--location", help="location to record in the metastore (default: file:<absolute PATH>)")
    p.add_argument("--owner", help="table owner (default: the user the metastore knows this client as: the "
                   "Kerberos principal's short name, else the current user)")
    p.add_argument("--table-property", action="append", default=[], metavar="K=V",
                   help="extra table parameter; fs.s3a.endpoint, fs.s3a.endpoint.region and "
                        "fs.s3a.path.style.access (also per bucket: fs.s3a.bucket.NAME.*) configure an S3 table "
                        "(credentials only from the AWS chain)")
    p.add_argument("--scan-float-columns", action="store_true",
                   help="read float/double columns when indexing, so their bounds can prune (footers cannot prove "
                        "a float column free of NaN); slower indexing. Sets hsh.stats.scan_float_columns=true")
    _add_membership_options(p)
    p.add_argument("--batch-size", type=int, default=1000, help="partitions per metastore call (default 1000)")
    p.add_argument("--strict", action="store_true", help=STRICT_HELP)
    add_statistics_options(p)
    add_footer_options(p)
    add_metastore_option(p)
    add_json_option(p)
    p.add_argument("--partition-stats", choices=background.MODES,
                   help="when each partition's statistics are written: now, before the command returns; "
                        "background, by a detached `hsh stats publish` it starts (the table's own statistics are "
                        "written before it returns; `hsh describe` shows the publish); auto: background above "
                        f"{background.AUTO_ABOVE} new partitions (default: ${background.ENV_MODE}, else auto)")
    p.set_defaults(func=_register)

    p = sub.add_parser("sync", help="add new partitions and columns found on storage; refresh the index")
    p.add_argument("table", metavar="DB.TABLE")
    p.add_argument("--drop-missing", action="store_true", help="also drop partitions whose folders vanished")
    p.add_argument("--dry-run", action="store_true", help="print the diff; change nothing")
    p.add_argument("--batch-size", type=int, default=1000, help="partitions per metastore call (default 1000)")
    p.add_argument("--strict", action="store_true", help=STRICT_HELP)
    add_statistics_options(p)
    add_footer_options(p)
    add_metastore_option(p)
    add_json_option(p)
    p.set_defaults(func=_sync)

    p = sub.add_parser("drop", help="drop a table from the metastore (data is kept unless --purge)")
    p.add_argument("table", metavar="DB.TABLE")
    p.add_argument("--purge", action="store_true", help="also delete the table's files")
    add_metastore_option(p)
    add_json_option(p)
    p.set_defaults(func=_drop)

    p = sub.add_parser("describe", help="show a registered table")
    p.add_argument("table", metavar="DB.TABLE")
    add_metastore_option(p)
    add_json_option(p)
    p.set_defaults(func=_describe)



def _add_membership_options(p: Any) -> None:
    p.add_argument("--bloom-filter-columns", metavar="COL[,COL...]",
                   help="keep a bloom filter per file for these columns (point lookups on unclustered ids: = IN "
                        "<=>); sets hsh.bloom.filter.columns (\"\" removes them when registering again)")
    p.add_argument("--bloom-filter-fpp", type=float, metavar="P",
                   help="false-positive rate the filters are sized for (default 0.01); hsh.bloom.filter.fpp")
    p.add_argument("--value-list-columns", metavar="COL[,COL...]",
                   help="keep each file's distinct values of these columns when there are at most "
                        "--value-list-max of them (exact = <> IN NOT IN <=>); sets hsh.value.list.columns")
    p.add_argument("--value-list-max", type=int, metavar="N",
                   help="most distinct values a file's value list keeps (default 64); hsh.value.list.max")


def _membership_properties(args: argparse.Namespace) -> dict[str, str]:
    from storage_handler.stats.membership.spec import (
        TABLE_PARAM_BLOOM_COLUMNS,
        TABLE_PARAM_BLOOM_FPP,
        TABLE_PARAM_VALUE_LIST_COLUMNS,
        TABLE_PARAM_VALUE_LIST_MAX,
        MembershipSpec,
    )

    given = {TABLE_PARAM_BLOOM_COLUMNS: args.bloom_filter_columns, TABLE_PARAM_BLOOM_FPP: args.bloom_filter_fpp,
             TABLE_PARAM_VALUE_LIST_COLUMNS: args.value_list_columns, TABLE_PARAM_VALUE_LIST_MAX: args.value_list_max}
    result = {k: str(v) for k, v in given.items() if v is not None}
    MembershipSpec.for_table(result, args.table)  # a bad value fails before anything is read or created
    return result


def _properties(pairs: list[str]) -> dict[str, str]:
    result = {}
    for pair in pairs:
        key, eq, value = pair.partition("=")
        if not eq or not key:
            raise ConfigurationError(f"--table-property {pair!r} is not of the form key=value")
        result[key.strip()] = value
    return result


def _unreadable_in_index(location: str, parameters: dict[str, str] | None = None) -> dict[str, Any]:
    """The unreadable files the table's index now records (after the command committed it)."""
    from storage_handler.registration.describe import unreadable_files
    from storage_handler.stats import load
    from storage_handler.storage import s3a_settings

    snapshot = load(location, membership=(), conf=s3a_settings(parameters or {}))
    return unreadable_files(snapshot.table if snapshot is not None else None)


def _register(args: argparse.Namespace) -> int:
    from metastore.client import MetastoreClient
    from metastore.names import parse_table_name
    from storage_handler.registration.describe import unreadable_files
    from storage_handler.registration.register import apply_registration, plan_registration
    from storage_handler.stats.engines.memory import use_lean_allocator
    from storage_handler.stats.index.file_stats import TABLE_PARAM_SCAN_FLOAT

    use_lean_allocator()  # before the job allocates: less memory kept resident (see stats/memory.py)

    name = parse_table_name(args.table)
    quiet = args.json
    engine = footer_engine(args)
    properties = {**_properties(args.table_property),
                  **({TABLE_PARAM_SCAN_FLOAT: "true"} if args.scan_float_columns else {}),
                  **_membership_properties(args)}
    choice = statistics_choice(args)
    mode = background.chosen_mode(args.partition_stats)
    uri = metastore_uri(args)
    with MetastoreClient(uri) as client:
        with footer_progress(enabled=not quiet) as footers:
            plan = plan_registration(
                client, name, args.path, location=args.location, owner=args.owner, table_properties=properties,
                progress=None if quiet else narrate, footers=footers, engine=engine, strict=args.strict,
            )
        if args.dry_run:
            result = {"dry_run": True, **plan.summary()}
            result["unreadable_files"] = unreadable_files(plan.dataset.seed)
            result["statistics"] = _planned_statistics(name, plan.dataset, plan.dataset.columns, choice)
        else:
            if choice.publish and background.defer(mode, len(plan.missing_partitions)):
                choice = replace(choice, defer_partitions=True)
            with footer_progress(enabled=not quiet) as footers, \
                    progress_bar("adding partitions", len(plan.missing_partitions), enabled=not quiet) as update:
                result = {"dry_run": False, **apply_registration(
                    client, plan, batch_size=args.batch_size, on_batch=update, progress=footers, engine=engine,
                    strict=args.strict, statistics=choice,
                )}
            if result["statistics"].get("partitions_deferred"):
                result["statistics"]["background"] = background.start(name, uri, overwrite=choice.overwrite)
            result["unreadable_files"] = _unreadable_in_index(plan.dataset.root, properties)
    warn_unreadable(result["unreadable_files"], planned=args.dry_run)
    warn_statistics(result["statistics"])
    if args.json:
        print_json(result)
    else:
        verb = "would register" if args.dry_run else "registered"
        say(f"{verb} {name}: {result['files']} files, {result['partitions_total']} partitions "
            f"({result['partitions_to_add']} new)")
        print_mapping(_for_people(result), title=f"register {name}")
    return 0


def _for_people(result: dict[str, Any]) -> dict[str, Any]:
    """``result`` for the table a person reads: the unreadable files as a count (the warning line names them), the
    statistics as one line (``--json`` has all of them)."""
    shown = dict(result)
    if "unreadable_files" in shown:
        shown["unreadable_files"] = shown["unreadable_files"].get("count", 0)
    if "statistics" in shown:
        shown["statistics"] = statistics_line(shown["statistics"])
    return shown


def _planned_statistics(name: Any, dataset: Any, columns: Any, choice: Any) -> dict[str, Any]:
    """``--dry-run``: the statistics the footers just read make of the dataset (nothing read from the metastore)."""
    from storage_handler.registration.statistics import dry_run, plan_statistics

    if dataset.seed is None:
        return {"publish": choice.publish, "note": "no index rows were read"}
    plan = plan_statistics(name, dataset.location, [(n, str(t)) for n, t in columns],
                           [k for k, _ in dataset.partition_keys], dataset.seed, 0)
    folders = {dataset.partition_name(v): dataset.partition_folders.get(tuple(v)) or dataset.partition_name(v)
               for v in dataset.partitions}
    return dry_run(plan, folders, choice)


def _sync(args: argparse.Namespace) -> int:
    from metastore.client import MetastoreClient
    from metastore.names import parse_table_name
    from storage_handler.registration.describe import unreadable_files
    from storage_handler.registration.sync import apply_sync, plan_sync
    from storage_handler.stats.engines.memory import use_lean_allocator

    use_lean_allocator()  # before the job allocates: less memory kept resident (see stats/memory.py)

    name = parse_table_name(args.table)
    quiet = args.json
    engine = footer_engine(args)
    choice = statistics_choice(args)
    with MetastoreClient(metastore_uri(args)) as client:
        with footer_progress(enabled=not quiet) as footers:
            plan = plan_sync(client, name, drop_missing=args.drop_missing, progress=None if quiet else narrate,
                             footers=footers, engine=engine, strict=args.strict)
        if args.dry_run:
            result = {"dry_run": True, **plan.summary()}
            result["unreadable_files"] = unreadable_files(plan.dataset.seed)
            table = client.get_table(name.database, name.table)
            columns = [(c.name, c.type) for c in table.sd.cols] + [(n, str(t)) for n, t in plan.new_columns]
            result["statistics"] = _planned_statistics(name, plan.dataset, columns, choice)
        else:
            with footer_progress(enabled=not quiet) as footers, \
                    progress_bar("adding partitions", len(plan.partitions_to_add), enabled=not quiet) as update:
                result = apply_sync(client, plan, batch_size=args.batch_size, on_batch=update, progress=footers,
                                    engine=engine, strict=args.strict, statistics=choice)
            table = client.get_table(name.database, name.table)
            result["unreadable_files"] = _unreadable_in_index(table.sd.location, table.parameters)
    warn_unreadable(result["unreadable_files"], planned=args.dry_run)
    warn_statistics(result["statistics"])
    if result["columns_in_no_file"]:
        warn(f"{name}: no file left has column(s) {', '.join(result['columns_in_no_file'])}; kept in the table, "
             "they read as NULL")
    if args.json:
        print_json(result)
        return 0
    verb = "would" if args.dry_run else "did"
    say(f"sync {name} ({verb}): +{len(result['partitions_to_add'])} partitions, "
        f"-{len(result['partitions_to_drop'])} partitions, +{len(result['new_columns'])} columns"
        + (f", remove the Spark provider and schema an earlier version wrote ({len(result['parameters_to_remove'])} "
           "parameters)" if result["parameters_to_remove"] else ""))
    print_mapping(_for_people(result), title=f"sync {name}")
    return 0


def _drop(args: argparse.Namespace) -> int:
    from metastore.client import MetastoreClient
    from metastore.names import parse_table_name
    from storage_handler.handler import StorageHandler
    from storage_handler.registration import hooked
    from storage_handler.storage import parse_location

    name = parse_table_name(args.table)
    with MetastoreClient(metastore_uri(args)) as client:
        location = client.get_table(name.database, name.table).sd.location
        if args.purge:
            parse_location(location)  # refuse a location no backend can reach before dropping anything
        sharing = _registered_on(client, location, but=name)
        if sharing and args.purge:
            raise ConfigurationError(
                f"table {name}'s folder {location} is also the folder of registered table {sharing[0]}: --purge "
                f"would delete its data and index. Drop {name} without --purge (the files and the index stay for "
                f"{sharing[0]}), or drop {sharing[0]} first"
            )
        hook = StorageHandler().get_meta_hook()
        hook.shared_location = bool(sharing)
        hooked.drop_table(client, name.database, name.table, hook, delete_data=args.purge)
    result = {"table": str(name), "dropped": True, "location": location, "data_deleted": bool(args.purge),
              "index_kept_for": [str(t) for t in sharing]}
    if args.json:
        print_json(result)
    elif sharing:
        say(f"dropped {name}; its folder {location} and index stay: registered table {sharing[0]} uses them")
    else:
        say(f"dropped {name} and its index; data at {location} " + ("deleted" if args.purge else "kept"))
    return 0


def _registered_on(client: Any, location: str, *, but: Any) -> list[Any]:
    """The other registered tables whose folder is ``location``: Hive allows two external tables on one folder,
    and with the handler they share its index."""
    from storage_handler.catalog.metastore_source import registered_tables
    from storage_handler.storage import parse_location

    ours = parse_location(location).place
    return sorted((name for name, table in registered_tables(client) if name != but and table.sd is not None
                   and table.sd.location and parse_location(table.sd.location).place == ours), key=str)


def _describe(args: argparse.Namespace) -> int:
    from metastore.client import MetastoreClient
    from metastore.names import parse_table_name
    from storage_handler.registration.describe import describe_table

    name = parse_table_name(args.table)
    with MetastoreClient(metastore_uri(args)) as client:
        info = describe_table(client, name)
    if args.json:
        print_json(info)
        return 0
    shown: dict[str, Any] = {}
    for key, value in info.items():
        if key == "statistics":
            shown[key] = published_line(value)
            continue
        if key == "statistics_background":
            if value is not None:
                shown[key] = background.describe(value)
            continue
        if key == "unindexed_files":  # the index's lag: files every query reads until it catches up
            shown[key] = value["count"] if not value["count"] else (
                f"{value['count']} ({value['bytes']} bytes), the oldest modified {value['oldest_age_seconds']} s "
                f"ago: {', '.join(value['files'][:3])}{', …' if value['count'] > 3 else ''}")
            continue
        if key != "unreadable_files":
            shown[key] = value
            continue
        shown[key] = value["count"]  # a person's view: the count, a few paths and the oldest one's age
        if value["count"]:
            shown["unreadable_sample"] = [f["path"] for f in value["files"][:5]]
            shown["unreadable_oldest"] = f"{value['oldest']} (modified {value['oldest_age']} ago)"
    print_mapping(shown, title=f"{name}")
    return 0
