"""Packets: pcap and pcapng records, link/IP/TCP layers, IP fragments, TCP reassembly, and the
synthetic capture writer. Imports nothing else of the decoders."""
