pub enum CalError { Input(String), Failed(String, i32) }
pub fn calibrate(_q: bool, _r: Option<usize>, _z: bool, _s: bool) -> Result<serde_json::Value, CalError> { Err(CalError::Input("todo".into())) }
