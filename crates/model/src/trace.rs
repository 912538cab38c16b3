//! Tracepoints (include/trace/events/*.h): the buffer of exported events and the one
//! macro that emits them, `trace_event!`. The registry of names is the shared
//! contract's (`thplab_workload::trace::TRACEPOINTS`); a name not in it is a compile
//! error. An event's fields are built only when its tracepoint is enabled, so a
//! disabled tracepoint costs one bit test.

use serde_json::{Map, Value};

/// At most this many events are kept (the ring buffer's size, in effect).
pub const MAX_TRACE_EVENTS: usize = 1_000_000;

/// The enabled tracepoints and the events recorded so far.
#[derive(Clone, Default)]
pub struct Trace {
    mask: u128,
    pub events: Vec<Value>,
    /// The time of events raised where the kernel's clock is not at hand (inside the
    /// buddy allocator): set by the caller before it calls in.
    pub clock: u64,
}

impl Trace {
    pub fn new(mask: u128) -> Trace {
        Trace { mask, events: vec![], clock: 0 }
    }
    /// Is tracepoint number `idx` (its index in TRACEPOINTS) enabled?
    #[inline(always)]
    pub fn on(&self, idx: usize) -> bool {
        (self.mask >> idx) & 1 != 0
    }
    /// Record one event: the fields, then `t_ns` and `event`.
    pub fn push(&mut self, t_ns: u64, name: &'static str, mut fields: Map<String, Value>) {
        if self.events.len() < MAX_TRACE_EVENTS {
            fields.insert("t_ns".into(), Value::from(t_ns));
            fields.insert("event".into(), Value::from(name));
            self.events.push(Value::Object(fields));
        }
    }
}

/// `trace_event!(k, name, field = value, ...)`: emit tracepoint `name` with the kernel's
/// field names, stamped with the kernel's clock (`k.clock.now + k.clock.cost`); `k` is a `Kernel`.
/// `trace_event!(@clock trace, name, ...)`: the same on a bare `Trace`, stamped with
/// its `clock`.
macro_rules! trace_event {
    (@clock $trace:expr, $name:ident $(, $f:ident = $v:expr)* $(,)?) => {{
        const TP: usize = thplab_workload::trace::tracepoint_index(stringify!($name));
        if $trace.on(TP) {
            #[allow(unused_mut)]
            let mut m = serde_json::Map::new();
            $( m.insert(stringify!($f).into(), serde_json::json!($v)); )*
            let t = $trace.clock;
            $trace.push(t, stringify!($name), m);
        }
    }};
    ($k:expr, $name:ident $(, $f:ident = $v:expr)* $(,)?) => {{
        const TP: usize = thplab_workload::trace::tracepoint_index(stringify!($name));
        if $k.rec.trace.on(TP) {
            #[allow(unused_mut)]
            let mut m = serde_json::Map::new();
            $( m.insert(stringify!($f).into(), serde_json::json!($v)); )*
            let t = $k.clock.now + $k.clock.cost;
            $k.rec.trace.push(t, stringify!($name), m);
        }
    }};
}
pub(crate) use trace_event;

/// `trace_enabled!(k, name)`: is tracepoint `name` enabled (for an event whose fields
/// must be gathered before the work they describe)?
macro_rules! trace_enabled {
    ($k:expr, $name:ident) => {
        $k.rec.trace.on(const { thplab_workload::trace::tracepoint_index(stringify!($name)) })
    };
}
pub(crate) use trace_enabled;
