fn main() { eprintln!("thplab-live: not built yet"); std::process::exit(2); }
