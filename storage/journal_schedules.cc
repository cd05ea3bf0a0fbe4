// Journal: reading the schedules and fires tables (sched).

#include <cstring>

#include "storage/journal.h"
#include "storage/journal_internal.h"

namespace apollo11::storage {

Result<std::vector<ScheduleRecord>> Journal::Schedules() {
  std::vector<ScheduleRecord> out;
  if (env_->schedules == 0) return out;
  ReadTxn txn(*this);
  APOLLO11_RETURN_IF_ERROR(txn.Begin());
  Cursor cursor;
  int rc = cursor.Open(txn.get(), env_->schedules);
  if (rc != 0) return Error(rc, "open a cursor");
  MDB_val k, v;
  for (rc = cursor.Get(&k, &v, MDB_FIRST); rc == 0; rc = cursor.Get(&k, &v, MDB_NEXT)) {
    Result<ScheduleRecord> r = DecodeSchedule(View(v));
    if (!r.ok()) return r.status();
    out.push_back(std::move(r).value());
  }
  if (rc != MDB_NOTFOUND) return Error(rc, "list schedules");
  return out;
}

Result<std::vector<FireRecord>> Journal::Fires(const std::string& pipeline, Micros from,
                                               Micros to) {
  std::vector<FireRecord> out;
  if (env_->fires == 0) return out;
  ReadTxn txn(*this);
  APOLLO11_RETURN_IF_ERROR(txn.Begin());
  Cursor cursor;
  int rc = cursor.Open(txn.get(), env_->fires);
  if (rc != 0) return Error(rc, "open a cursor");
  const std::string start = FireKey(pipeline, from), end = FireKey(pipeline, to);
  MDB_val k = Val(start), v;
  for (rc = cursor.Get(&k, &v, MDB_SET_RANGE); rc == 0 && View(k) <= end;
       rc = cursor.Get(&k, &v, MDB_NEXT)) {
    Result<FireRecord> r = DecodeFire(View(v));
    if (!r.ok()) return r.status();
    out.push_back(std::move(r).value());
  }
  if (rc != 0 && rc != MDB_NOTFOUND) return Error(rc, "list fires");
  return out;
}

Result<std::optional<FireRecord>> Journal::LastFire(const std::string& pipeline) {
  if (env_->fires == 0) return std::optional<FireRecord>();
  ReadTxn txn(*this);
  APOLLO11_RETURN_IF_ERROR(txn.Begin());
  Cursor cursor;
  int rc = cursor.Open(txn.get(), env_->fires);
  if (rc != 0) return Error(rc, "open a cursor");
  const std::string start = FireKey(pipeline, INT64_MIN), end = FireKey(pipeline, INT64_MAX);
  MDB_val k = Val(end), v;
  rc = cursor.Get(&k, &v, MDB_SET_RANGE);
  rc = rc == 0 ? cursor.Get(&k, &v, MDB_PREV) : cursor.Get(&k, &v, MDB_LAST);
  if (rc == MDB_NOTFOUND || (rc == 0 && View(k) < start)) return std::optional<FireRecord>();
  if (rc != 0) return Error(rc, "find the last fire");
  Result<FireRecord> r = DecodeFire(View(v));
  if (!r.ok()) return r.status();
  return std::optional<FireRecord>(std::move(r).value());
}

}  // namespace apollo11::storage
