//! `autopath`'s options: the zones it walks and the search path it walks
//! them with. The walk itself is the router's (`query::route::autopath`):
//! it asks each search name through the blocks, as a client would.

pub mod setup;
