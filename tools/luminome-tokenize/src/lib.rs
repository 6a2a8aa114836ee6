pub fn _y() {}
