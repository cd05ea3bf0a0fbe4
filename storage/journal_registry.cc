// registry: the pipeline registry's table in the journal. One LMDB database,
// "registry", holds three kinds of entries told apart by their first byte:
//   'v' NAME \0 be32(version) -> PipelineVersionRecord (immutable)
//   's' NAME                  -> PipelineStateRecord
//   'k' NAME \0 KEY           -> TriggerKeyRecord (first run kept)
// A journal written before the table existed opens read-only without it and
// reads as an empty registry.

#include <lmdb.h>

#include <set>

#include "storage/journal.h"
#include "storage/journal_internal.h"
#include "storage/record_codec.h"

namespace apollo11::storage {
namespace {

std::string VersionPrefix(const std::string& name) { return "v" + name + std::string(1, '\0'); }

std::string VersionKey(const std::string& name, uint32_t version) {
  std::string key = VersionPrefix(name);
  for (int shift = 24; shift >= 0; shift -= 8) key.push_back(static_cast<char>(version >> shift));
  return key;
}

uint32_t VersionOfKey(std::string_view key) {
  uint32_t v = 0;
  for (size_t i = key.size() - 4; i < key.size(); ++i) v = (v << 8) | static_cast<uint8_t>(key[i]);
  return v;
}

std::string StateKey(const std::string& name) { return "s" + name; }

std::string TriggerKey(const std::string& name, const std::string& key) {
  return "k" + name + std::string(1, '\0') + key;
}

}  // namespace

int Journal::WriteRegistry(MDB_txn* txn, const Batch& batch) {
  const MDB_dbi dbi = env_->registry;
  int rc = 0;
  for (const PipelineVersionRecord& r : batch.pipeline_versions()) {
    const std::string key = VersionKey(r.name, r.version), value = codec::EncodePipelineVersion(r);
    MDB_val k = Val(key), v = Val(value);
    rc = mdb_put(txn, dbi, &k, &v, MDB_NOOVERWRITE);
    if (rc != 0 && rc != MDB_KEYEXIST) return rc;
  }
  for (const PipelineStateRecord& r : batch.pipeline_states()) {
    const std::string key = StateKey(r.name), value = codec::EncodePipelineState(r);
    MDB_val k = Val(key), v = Val(value);
    if ((rc = mdb_put(txn, dbi, &k, &v, 0)) != 0) return rc;
  }
  for (const TriggerKeyRecord& r : batch.trigger_keys()) {
    const std::string key = TriggerKey(r.name, r.key), value = codec::EncodeTriggerKey(r);
    MDB_val k = Val(key), v = Val(value);
    rc = mdb_put(txn, dbi, &k, &v, MDB_NOOVERWRITE);
    if (rc != 0 && rc != MDB_KEYEXIST) return rc;
  }
  return 0;
}

int Journal::KeepRegisteredHashes(MDB_txn* txn, std::set<std::string>* hashes) {
  if (env_->registry_missing || hashes->empty()) return 0;
  Cursor cursor;
  int rc = cursor.Open(txn, env_->registry);
  if (rc != 0) return rc;
  MDB_val k = Val("v"), v;
  for (rc = cursor.Get(&k, &v, MDB_SET_RANGE); rc == 0 && !hashes->empty();
       rc = cursor.Get(&k, &v, MDB_NEXT)) {
    std::string_view key = View(k);
    if (key.empty() || key[0] != 'v') break;
    Result<PipelineVersionRecord> r = codec::DecodePipelineVersion("", 0, View(v));
    if (!r.ok()) return MDB_CORRUPTED;
    hashes->erase(r->hash);
  }
  return rc == MDB_NOTFOUND ? 0 : rc;
}

Result<std::vector<PipelineStateRecord>> Journal::ListPipelineStates() {
  std::vector<PipelineStateRecord> out;
  if (env_->registry_missing) return out;
  ReadTxn txn(*this);
  APOLLO11_RETURN_IF_ERROR(txn.Begin());
  Cursor cursor;
  int rc = cursor.Open(txn.get(), env_->registry);
  if (rc != 0) return Error(rc, "open a cursor");
  MDB_val k = Val("s"), v;
  for (rc = cursor.Get(&k, &v, MDB_SET_RANGE); rc == 0; rc = cursor.Get(&k, &v, MDB_NEXT)) {
    std::string_view key = View(k);
    if (key.empty() || key[0] != 's') break;
    Result<PipelineStateRecord> r = codec::DecodePipelineState(key.substr(1), View(v));
    if (!r.ok()) return r.status();
    out.push_back(std::move(r).value());
  }
  if (rc != 0 && rc != MDB_NOTFOUND) return Error(rc, "list pipelines");
  return out;
}

Result<std::optional<PipelineStateRecord>> Journal::GetPipelineState(const std::string& name) {
  if (env_->registry_missing) return std::optional<PipelineStateRecord>();
  ReadTxn txn(*this);
  APOLLO11_RETURN_IF_ERROR(txn.Begin());
  auto found = txn.Find(env_->registry, StateKey(name));
  if (!found.ok()) return found.status();
  if (!found->has_value()) return std::optional<PipelineStateRecord>();
  Result<PipelineStateRecord> r = codec::DecodePipelineState(name, **found);
  if (!r.ok()) return r.status();
  return std::optional<PipelineStateRecord>(std::move(r).value());
}

Result<std::vector<PipelineVersionRecord>> Journal::PipelineVersions(const std::string& name) {
  std::vector<PipelineVersionRecord> out;
  if (env_->registry_missing) return out;
  const std::string prefix = VersionPrefix(name);
  if (prefix.size() + 4 > 511) return out;
  ReadTxn txn(*this);
  APOLLO11_RETURN_IF_ERROR(txn.Begin());
  Cursor cursor;
  int rc = cursor.Open(txn.get(), env_->registry);
  if (rc != 0) return Error(rc, "open a cursor");
  MDB_val k = Val(prefix), v;
  for (rc = cursor.Get(&k, &v, MDB_SET_RANGE); rc == 0; rc = cursor.Get(&k, &v, MDB_NEXT)) {
    std::string_view key = View(k);
    if (key.size() != prefix.size() + 4 || key.substr(0, prefix.size()) != prefix) break;
    Result<PipelineVersionRecord> r =
        codec::DecodePipelineVersion(name, VersionOfKey(key), View(v));
    if (!r.ok()) return r.status();
    out.push_back(std::move(r).value());
  }
  if (rc != 0 && rc != MDB_NOTFOUND) return Error(rc, "list pipeline versions");
  return out;
}

Result<std::optional<std::string>> Journal::RunOfTriggerKey(const std::string& name,
                                                            const std::string& key) {
  if (env_->registry_missing) return std::optional<std::string>();
  ReadTxn txn(*this);
  APOLLO11_RETURN_IF_ERROR(txn.Begin());
  auto found = txn.Find(env_->registry, TriggerKey(name, key));
  if (!found.ok()) return found.status();
  if (!found->has_value()) return std::optional<std::string>();
  Result<TriggerKeyRecord> r = codec::DecodeTriggerKey(**found);
  if (!r.ok()) return r.status();
  return std::optional<std::string>(r->run_id);
}

}  // namespace apollo11::storage
