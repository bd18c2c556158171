"""The spider of test_scrapy.py's crawl: follows every link of the generated site from the
start pages it is given (-a starts=/p0.html,/p9.html -a base=http://127.0.0.1:PORT)."""

import scrapy


class SiteSpider(scrapy.Spider):
    name = "site"

    def start_requests(self):
        for path in self.starts.split(","):
            # dont_filter=False: start pages go through the dupefilter too.
            yield scrapy.Request(self.base + path, dont_filter=False)

    def parse(self, response):
        for href in response.css("a::attr(href)").getall():
            yield response.follow(href, self.parse)
