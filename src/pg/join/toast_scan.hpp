// Out-of-line signatures of a join's input, read after its rows by one sequential scan.
//
// A signature of more than about 2 KB is stored out of line, in chunks of about 2 KB in the
// table's toast relation. Detoasting it with its row looks its chunks up in the toast relation's
// index, a random index descent per value, which then dominates the read. When the input's
// out-of-line values make up most of their toast relation (a table that holds signatures rather
// than their texts), it is cheaper to note each such row's toast pointer while the rows are read,
// and then read the whole toast relation once in storage order, putting each value's chunks
// together as they come, in any order. A value with a chunk the usual detoasting would not expect
// (or one that would take the open values past a memory cap), and every value when they are a
// small part of the relation, is detoasted the usual way afterwards; so is a value in another
// toast relation than the first (a partitioned table), or a compressed one, which is never noted.
#pragma once

#include "pg/pg.hpp"

extern "C" {
#include "access/detoast.h"
}

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/join/read_pipeline.hpp"

namespace spotsigs::pg {

// Takes one row's value (PostgreSQL code; may raise errors): data is len bytes of a spotsig
// varlena's payload.
using AddValueFn = void (*)(void* ctx, int64 id, const char* data, size_t len);

class DeferredToast {
public:
    // Notes (id, raw) and returns true when raw, a stored column value, is an uncompressed
    // out-of-line value of the same toast relation as those noted before; false leaves it to the
    // caller. Inside pg_entry (it may throw std::bad_alloc).
    bool defer(int64 id, Datum raw);
    // From now on, the notes' growth is charged to budget before it is allocated, and so is each
    // value the scan holds while its chunks come (one the budget refuses is detoasted afterwards,
    // on its own); budget outlives this.
    void charge_to(ReadBudget* budget) noexcept { budget_ = budget; }
    // Under a budget (charge_to), makes room for the next defer() in advance, charging the
    // growth of the notes first, so that defer() itself allocates nothing; false, with nothing
    // charged or allocated, when the budget refuses it. Without one, true (defer() grows them).
    bool reserve_charged() {
        if (budget_ == nullptr || values_.size() < values_.capacity()) return true;
        const size_t more = std::max<size_t>(values_.capacity(), 64);
        if (!budget_->charge(more * sizeof(Value))) return false;
        values_.reserve(values_.capacity() + more);
        return true;
    }
    // Values noted.
    size_t size() const noexcept { return values_.size(); }
    // Bytes held by the notes (about 40 per value noted, 16 more per value during the scan).
    size_t memory_bytes() const noexcept {
        return values_.capacity() * sizeof(Value) + slots_.capacity() * sizeof(int64);
    }
    // Hands every noted value to add(ctx, ...), then forgets them; returns how many came from
    // the sequential scan. C++ code: PostgreSQL is reached through pg_guard.
    size_t fetch(AddValueFn add, void* ctx);
    // The most bytes the scan held for values whose chunks had not all come yet.
    uint64 peak_open_bytes() const noexcept { return peak_open_; }

private:
    enum class State : uint8_t { Open, Done, Detoast };
    struct Value {
        int64 id;
        varatt_external ptr;
        uint32 received;  // chunks received so far
        State state;
        char* buf;  // the value's bytes while its chunks come (palloc'd)
    };
    // The index of the value with this value id, or -1.
    int64 find(Oid valueid) const noexcept;
    // Reads the toast relation once, putting together every value whose chunks are as expected.
    size_t scan(AddValueFn add, void* ctx);

    ReadBudget* budget_ = nullptr;
    Oid toastrel_ = InvalidOid;
    uint64 bytes_ = 0;  // of the values noted
    uint64 peak_open_ = 0;
    std::vector<Value> values_;
    std::vector<int64> slots_;  // open addressing: value id -> index into values_
};

}  // namespace spotsigs::pg
