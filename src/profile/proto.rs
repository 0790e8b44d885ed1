//! A CPU profile in pprof's format (the `perftools.profiles.Profile`
//! message of google/pprof's profile.proto, which `go tool pprof` reads):
//! samples of call stacks, each frame a location with its function's
//! name, file and line, counted in samples and in CPU nanoseconds.

use std::collections::HashMap;

use prost::Message as _;

#[derive(Clone, PartialEq, prost::Message)]
pub struct Profile {
    #[prost(message, repeated, tag = "1")]
    pub sample_type: Vec<ValueType>,
    #[prost(message, repeated, tag = "2")]
    pub sample: Vec<Sample>,
    #[prost(message, repeated, tag = "4")]
    pub location: Vec<Location>,
    #[prost(message, repeated, tag = "5")]
    pub function: Vec<Function>,
    #[prost(string, repeated, tag = "6")]
    pub string_table: Vec<String>,
    #[prost(int64, tag = "9")]
    pub time_nanos: i64,
    #[prost(int64, tag = "10")]
    pub duration_nanos: i64,
    #[prost(message, optional, tag = "11")]
    pub period_type: Option<ValueType>,
    #[prost(int64, tag = "12")]
    pub period: i64,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ValueType {
    #[prost(int64, tag = "1")]
    pub r#type: i64,
    #[prost(int64, tag = "2")]
    pub unit: i64,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Sample {
    /// Leaf first.
    #[prost(uint64, repeated, tag = "1")]
    pub location_id: Vec<u64>,
    #[prost(int64, repeated, tag = "2")]
    pub value: Vec<i64>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Location {
    #[prost(uint64, tag = "1")]
    pub id: u64,
    #[prost(message, repeated, tag = "4")]
    pub line: Vec<Line>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Line {
    #[prost(uint64, tag = "1")]
    pub function_id: u64,
    #[prost(int64, tag = "2")]
    pub line: i64,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Function {
    #[prost(uint64, tag = "1")]
    pub id: u64,
    #[prost(int64, tag = "2")]
    pub name: i64,
    #[prost(int64, tag = "3")]
    pub system_name: i64,
    #[prost(int64, tag = "4")]
    pub filename: i64,
}

/// One frame of a sampled stack: a function (demangled and raw names),
/// its file and line.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Frame {
    pub name: String,
    pub system_name: String,
    pub file: String,
    pub line: u32,
}

/// Builds a profile: strings, functions and locations each written once.
pub struct Builder {
    profile: Profile,
    strings: HashMap<String, i64>,
    functions: HashMap<(String, String, String), u64>,
    locations: HashMap<Vec<Frame>, u64>,
    /// Nanoseconds one sample stands for.
    period: i64,
}

impl Builder {
    /// A profile sampled `frequency` times a second, started at
    /// `time_nanos` (Unix) and lasting `duration_nanos`.
    pub fn new(frequency: i32, time_nanos: i64, duration_nanos: i64) -> Builder {
        let period = 1_000_000_000 / i64::from(frequency.max(1));
        let mut b = Builder {
            profile: Profile {
                time_nanos,
                duration_nanos,
                period,
                ..Profile::default()
            },
            strings: HashMap::new(),
            functions: HashMap::new(),
            locations: HashMap::new(),
            period,
        };
        b.string("");
        let samples = b.value_type("samples", "count");
        let cpu = b.value_type("cpu", "nanoseconds");
        b.profile.sample_type = vec![samples, cpu.clone()];
        b.profile.period_type = Some(cpu);
        b
    }

    fn string(&mut self, s: &str) -> i64 {
        if let Some(&i) = self.strings.get(s) {
            return i;
        }
        let i = self.profile.string_table.len() as i64;
        self.profile.string_table.push(s.to_string());
        self.strings.insert(s.to_string(), i);
        i
    }

    fn value_type(&mut self, kind: &str, unit: &str) -> ValueType {
        ValueType {
            r#type: self.string(kind),
            unit: self.string(unit),
        }
    }

    fn function(&mut self, f: &Frame) -> u64 {
        let key = (f.name.clone(), f.system_name.clone(), f.file.clone());
        if let Some(&id) = self.functions.get(&key) {
            return id;
        }
        let id = self.profile.function.len() as u64 + 1;
        let function = Function {
            id,
            name: self.string(&f.name),
            system_name: self.string(&f.system_name),
            filename: self.string(&f.file),
        };
        self.profile.function.push(function);
        self.functions.insert(key, id);
        id
    }

    /// The location of one address: its frames, innermost (inlined) first.
    fn location(&mut self, frames: &[Frame]) -> u64 {
        if let Some(&id) = self.locations.get(frames) {
            return id;
        }
        let id = self.profile.location.len() as u64 + 1;
        let line = frames
            .iter()
            .map(|f| Line {
                function_id: self.function(f),
                line: i64::from(f.line),
            })
            .collect();
        self.profile.location.push(Location { id, line });
        self.locations.insert(frames.to_vec(), id);
        id
    }

    /// Adds a stack (leaf first, each address's frames innermost first)
    /// seen `count` times.
    pub fn sample(&mut self, stack: &[Vec<Frame>], count: i64) {
        let location_id = stack.iter().map(|frames| self.location(frames)).collect();
        let value = vec![count, count * self.period];
        self.profile.sample.push(Sample { location_id, value });
    }

    /// The profile's bytes.
    pub fn encode(self) -> Vec<u8> {
        self.profile.encode_to_vec()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(name: &str, line: u32) -> Frame {
        Frame {
            name: name.into(),
            system_name: format!("_ZN{name}"),
            file: "src/x.rs".into(),
            line,
        }
    }

    #[test]
    fn strings_functions_and_locations_are_written_once() {
        let mut b = Builder::new(100, 1, 2);
        let stack = vec![vec![frame("leaf", 3)], vec![frame("main", 9)]];
        b.sample(&stack, 4);
        b.sample(&stack, 1);
        let p = Profile::decode(&b.encode()[..]).expect("decodes");
        assert_eq!(p.string_table[0], "");
        assert_eq!(p.location.len(), 2);
        assert_eq!(p.function.len(), 2);
        assert_eq!(p.sample.len(), 2);
        assert_eq!(p.sample[0].location_id, vec![1, 2]);
        assert_eq!(p.sample[0].value, vec![4, 40_000_000]);
        assert_eq!(p.period, 10_000_000);
        let leaf = &p.function[0];
        assert_eq!(p.string_table[leaf.name as usize], "leaf");
        assert_eq!(p.string_table[leaf.filename as usize], "src/x.rs");
    }
}
